//! Counters for `/metrics`, in the Prometheus text format. Kept by the
//! executor (every call passes there), read by the HTTP transport.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0];

#[derive(Default)]
struct Histogram {
    /// Observations at or below each bound (cumulative when rendered).
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// What the host has done since it started.
#[derive(Default)]
pub struct Metrics {
    /// (tool, outcome) → calls.
    calls: Mutex<BTreeMap<(String, String), u64>>,
    /// tool → latency histogram.
    latency: Mutex<BTreeMap<String, Histogram>>,
    load_failures: AtomicU64,
}

impl Metrics {
    /// Count one finished call.
    pub fn record(&self, tool: &str, outcome: &str, elapsed: Duration) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((tool.to_owned(), outcome.to_owned()))
            .or_default() += 1;
        let seconds = elapsed.as_secs_f64();
        let mut latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let histogram = latency.entry(tool.to_owned()).or_default();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            histogram.counts[bucket] += 1;
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    /// Count packs that failed to load.
    pub fn set_load_failures(&self, failures: usize) {
        self.load_failures.store(failures as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition, with `sessions` open and `running`
    /// calls under way now.
    pub fn render(&self, sessions: usize, running: usize) -> String {
        let mut out = String::new();
        out.push_str("# HELP packhost_calls_total Tool calls by tool and outcome.\n");
        out.push_str("# TYPE packhost_calls_total counter\n");
        for ((tool, outcome), count) in self.calls.lock().unwrap_or_else(|e| e.into_inner()).iter()
        {
            let _ = writeln!(
                out,
                "packhost_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {count}"
            );
        }
        out.push_str("# HELP packhost_call_duration_seconds Tool call latency.\n");
        out.push_str("# TYPE packhost_call_duration_seconds histogram\n");
        for (tool, histogram) in self
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(histogram.counts) {
                cumulative += count;
                let _ = writeln!(
                    out,
                    "packhost_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "packhost_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"+Inf\"}} {}\n\
                 packhost_call_duration_seconds_sum{{tool=\"{tool}\"}} {}\n\
                 packhost_call_duration_seconds_count{{tool=\"{tool}\"}} {}",
                histogram.count, histogram.sum, histogram.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP packhost_sessions Open MCP sessions.\n# TYPE packhost_sessions gauge\npackhost_sessions {sessions}"
        );
        let _ = writeln!(
            out,
            "# HELP packhost_calls_running Tool calls under way.\n# TYPE packhost_calls_running gauge\npackhost_calls_running {running}"
        );
        let _ = writeln!(
            out,
            "# HELP packhost_pack_load_failures Packs that failed to load.\n# TYPE packhost_pack_load_failures gauge\npackhost_pack_load_failures {}",
            self.load_failures.load(Ordering::Relaxed)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let metrics = Metrics::default();
        metrics.record("proj.list", "ok", Duration::from_micros(500));
        metrics.record("proj.list", "ok", Duration::from_millis(20));
        metrics.record("proj.list", "NOT_FOUND", Duration::from_millis(2));
        metrics.set_load_failures(1);
        let text = metrics.render(3, 2);
        assert!(
            text.contains("packhost_calls_total{tool=\"proj.list\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("packhost_calls_total{tool=\"proj.list\",outcome=\"NOT_FOUND\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.001\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.005\"} 2\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.05\"} 3\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("packhost_call_duration_seconds_count{tool=\"proj.list\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("packhost_sessions 3\n")
                && text.contains("packhost_calls_running 2\n")
                && text.contains("packhost_pack_load_failures 1\n"),
            "{text}"
        );
    }
}
