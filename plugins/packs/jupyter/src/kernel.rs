//! The one trait both backends implement: start a kernel, and drive it.

use std::{future::Future, pin::Pin, sync::Arc};

use pack_process::Bound;
use pack_sdk::PackError;

use crate::conn::Conn;

/// A boxed future, as trait objects need.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A kernel the pack started.
pub struct Started {
    /// The session id the caller uses.
    pub session_id: String,
    /// The kernel's id (equal to the session id without a notebook).
    pub kernel_id: String,
    /// The running kernel.
    pub kernel: Arc<dyn Kernel>,
}

/// Where kernels come from: launched here (`local`) or on a Jupyter Server.
pub trait Backend: Send + Sync {
    /// `local` or `server`.
    fn name(&self) -> &'static str;

    /// Whether kernels can be started now (the server answers).
    fn ready(&self) -> BoxFuture<'_, Result<(), PackError>> {
        Box::pin(async { Ok(()) })
    }

    /// Start a kernel of `kernel_name`, in a notebook session when
    /// `notebook_path` is given.
    fn start<'a>(
        &'a self,
        kernel_name: &'a str,
        notebook_path: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Started, PackError>>;
}

/// A running kernel.
pub trait Kernel: Send + Sync {
    /// The current connection (a restart replaces it).
    fn conn(&self) -> Arc<Conn>;

    /// Interrupt what it runs (SIGINT locally, the REST call on a server).
    fn interrupt(&self) -> BoxFuture<'_, Result<(), String>>;

    /// Restart it: state is lost, the session and kernel ids stay.
    fn restart(&self) -> BoxFuture<'_, Result<(), String>>;

    /// Stop using it from this instance: a kernel on a Jupyter Server runs
    /// on for the other instances; one launched here stops.
    fn release(&self) -> BoxFuture<'_, ()>;

    /// Stop it for good.
    fn shutdown(&self) -> BoxFuture<'_, ()>;

    /// Once it died: the bound of its sandbox it passed, if that ended it
    /// (only kernels launched here have one).
    fn exceeded(&self) -> BoxFuture<'_, Option<Bound>> {
        Box::pin(async { None })
    }
}
