//! Why a request failed, in a few words.

use std::time::Duration;

use rmcp::transport::{DynamicTransportError, streamable_http_client::StreamableHttpError};

use crate::{Endpoint, settings::DownstreamError};

pub(crate) fn no_answer(endpoint: &Endpoint, timeout: Duration) -> DownstreamError {
    DownstreamError::Upstream(format!(
        "{} gave no answer within {} ms",
        endpoint.describe(),
        timeout.as_millis()
    ))
}

/// Why a transport failed, in a few words.
pub(crate) fn transport_reason(error: &DynamicTransportError) -> String {
    // The HTTP client's own error hides its cause from the chain.
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::Client(e)) => root_cause(e),
        _ => root_cause(error),
    }
}

/// The innermost error of a chain ("connection refused", a TLS alert): the
/// outer layers name rmcp's and reqwest's types, which tell a reader nothing.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}
