//! What the zygote's children narrow themselves through: this library (the
//! pack's own `.so`), which the zygote loads once, exports the sandbox's
//! [`Narrowing::apply`] as a C function, so the rules are the sandbox's
//! alone.

use std::{
    ffi::{CStr, c_char, c_int},
    io,
    os::unix::ffi::OsStrExt,
    path::PathBuf,
};

use pack_process::Narrowing;

/// The C function the zygote calls in a child: apply `narrowing` (a
/// [`Narrowing`] as JSON, NUL-terminated); 0, or -1 with why in `error`
/// (`capacity` bytes, NUL-terminated, cut to fit).
///
/// # Safety
/// `narrowing` is a NUL-terminated string and `error` holds `capacity`
/// bytes (at least one).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn packhost_narrow_self(
    narrowing: *const c_char,
    error: *mut c_char,
    capacity: usize,
) -> c_int {
    // SAFETY: as the caller promises.
    let narrowing = unsafe { CStr::from_ptr(narrowing) };
    let applied = serde_json::from_slice::<Narrowing>(narrowing.to_bytes())
        .map_err(|e| format!("not a narrowing: {e}"))
        .and_then(|narrowing| narrowing.apply());
    let Err(why) = applied else {
        return 0;
    };
    let length = why.len().min(capacity.saturating_sub(1));
    // SAFETY: `length` + 1 <= `capacity` bytes, as the caller promises.
    unsafe {
        std::ptr::copy_nonoverlapping(why.as_ptr(), error.cast::<u8>(), length);
        *error.add(length) = 0;
    }
    -1
}

/// The file of the object [`packhost_narrow_self`] is in: the pack's `.so`
/// once the host loaded it.
pub fn library() -> io::Result<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let address = packhost_narrow_self as *const libc::c_void;
    // SAFETY: dladdr fills `info` for an address of a loaded object.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return Err(io::Error::other("cannot tell which file this library is"));
    }
    // SAFETY: dladdr gave a NUL-terminated name that lives with the object.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    // Its real path: the zygote loads it from another folder, and the
    // sandbox grants by real paths.
    std::fs::canonicalize(std::ffi::OsStr::from_bytes(name.to_bytes()))
}
