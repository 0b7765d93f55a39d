//! Counters for `/metrics`, in the Prometheus text format. Kept by the
//! executor (every call passes there) per organisation, read by the HTTP
//! transport, which shows a caller its own organisation's only. Every
//! series of a named instance (`[http] instance`) says which, so figures
//! of several instances read through one proxy stay apart.

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
    /// (organisation, tool, outcome) → calls.
    calls: Mutex<BTreeMap<(String, String, String), u64>>,
    /// (organisation, tool) → latency histogram.
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
    /// organisation → calls under way.
    running: Mutex<BTreeMap<String, usize>>,
    load_failures: AtomicU64,
    /// `packhost_instance="<name>",` when the instance has a name: the
    /// first label of a series with labels.
    instance: String,
    /// `{packhost_instance="<name>"}` likewise: a series' only label.
    instance_only: String,
}

/// Counts a call of an organisation as running until dropped, however the
/// call ends.
pub struct Running<'a> {
    metrics: &'a Metrics,
    org: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut running = self.metrics.running();
        if let Some(count) = running.get_mut(&self.org) {
            *count -= 1;
            if *count == 0 {
                running.remove(&self.org);
            }
        }
    }
}

impl Metrics {
    fn running(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call of `org` starts.
    pub fn started(&self, org: &str) -> Running<'_> {
        *self.running().entry(org.to_owned()).or_default() += 1;
        Running {
            metrics: self,
            org: org.to_owned(),
        }
    }

    /// Calls under way, every organisation's.
    pub fn running_in_all(&self) -> usize {
        self.running().values().sum()
    }

    /// Count one finished call of `org`.
    pub fn record(&self, org: &str, tool: &str, outcome: &str, elapsed: Duration) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((org.to_owned(), tool.to_owned(), outcome.to_owned()))
            .or_default() += 1;
        let seconds = elapsed.as_secs_f64();
        let mut latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let histogram = latency
            .entry((org.to_owned(), tool.to_owned()))
            .or_default();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            histogram.counts[bucket] += 1;
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    /// The counters of instance `name` (`None`: unnamed).
    pub fn of_instance(name: Option<&str>) -> Self {
        let label = name.map(|name| format!("packhost_instance=\"{name}\""));
        Self {
            instance: label.as_ref().map_or(String::new(), |l| format!("{l},")),
            instance_only: label.map_or(String::new(), |l| format!("{{{l}}}")),
            ..Self::default()
        }
    }

    /// Count packs that failed to load.
    pub fn set_load_failures(&self, failures: usize) {
        self.load_failures.store(failures as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of organisation `org`'s figures,
    /// with its `sessions` open now.
    pub fn render(&self, org: &str, sessions: usize) -> String {
        let mut out = String::new();
        let (i, only) = (&self.instance, &self.instance_only);
        out.push_str("# HELP packhost_calls_total Tool calls by tool and outcome.\n");
        out.push_str("# TYPE packhost_calls_total counter\n");
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, tool, outcome), count) in calls.iter().filter(|((of, ..), _)| of == org) {
            let _ = writeln!(
                out,
                "packhost_calls_total{{{i}tool=\"{tool}\",outcome=\"{outcome}\"}} {count}"
            );
        }
        out.push_str("# HELP packhost_call_duration_seconds Tool call latency.\n");
        out.push_str("# TYPE packhost_call_duration_seconds histogram\n");
        let latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, tool), histogram) in latency.iter().filter(|((of, _), _)| of == org) {
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(histogram.counts) {
                cumulative += count;
                let _ = writeln!(
                    out,
                    "packhost_call_duration_seconds_bucket{{{i}tool=\"{tool}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "packhost_call_duration_seconds_bucket{{{i}tool=\"{tool}\",le=\"+Inf\"}} {}\n\
                 packhost_call_duration_seconds_sum{{{i}tool=\"{tool}\"}} {}\n\
                 packhost_call_duration_seconds_count{{{i}tool=\"{tool}\"}} {}",
                histogram.count, histogram.sum, histogram.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP packhost_sessions Open MCP sessions.\n# TYPE packhost_sessions gauge\npackhost_sessions{only} {sessions}"
        );
        let _ = writeln!(
            out,
            "# HELP packhost_calls_running Tool calls under way.\n# TYPE packhost_calls_running gauge\npackhost_calls_running{only} {}",
            self.running().get(org).copied().unwrap_or(0)
        );
        let _ = writeln!(
            out,
            "# HELP packhost_pack_load_failures Packs that failed to load.\n# TYPE packhost_pack_load_failures gauge\npackhost_pack_load_failures{only} {}",
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
        metrics.record("acme", "proj.list", "ok", Duration::from_micros(500));
        metrics.record("acme", "proj.list", "ok", Duration::from_millis(20));
        metrics.record("acme", "proj.list", "NOT_FOUND", Duration::from_millis(2));
        metrics.set_load_failures(1);
        let _one = metrics.started("acme");
        let _two = metrics.started("acme");
        let text = metrics.render("acme", 3);
        for line in [
            "packhost_calls_total{tool=\"proj.list\",outcome=\"ok\"} 2\n",
            "packhost_calls_total{tool=\"proj.list\",outcome=\"NOT_FOUND\"} 1\n",
            "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.001\"} 1\n",
            "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.005\"} 2\n",
            "packhost_call_duration_seconds_bucket{tool=\"proj.list\",le=\"0.05\"} 3\n",
            "packhost_call_duration_seconds_count{tool=\"proj.list\"} 3\n",
            "packhost_sessions 3\n",
            "packhost_calls_running 2\n",
            "packhost_pack_load_failures 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn a_named_instances_series_say_its_name() {
        let metrics = Metrics::of_instance(Some("two"));
        metrics.record("acme", "proj.list", "ok", Duration::from_micros(500));
        let text = metrics.render("acme", 1);
        for line in [
            "packhost_calls_total{packhost_instance=\"two\",tool=\"proj.list\",outcome=\"ok\"} 1\n",
            "packhost_call_duration_seconds_count{packhost_instance=\"two\",tool=\"proj.list\"} 1\n",
            "packhost_sessions{packhost_instance=\"two\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn an_organisation_sees_its_own_figures_only() {
        let metrics = Metrics::default();
        metrics.record("acme", "proj.secret_plan", "ok", Duration::from_millis(1));
        let running = metrics.started("acme");
        let text = metrics.render("globex", 0);
        assert!(!text.contains("secret_plan"), "{text}");
        assert!(text.contains("packhost_calls_running 0\n"), "{text}");
        assert_eq!(metrics.running_in_all(), 1);
        drop(running);
        assert_eq!(metrics.running_in_all(), 0);
    }
}
