//! What every benchmark binary shares: arguments, percentiles, the table.

use std::{
    str::FromStr,
    time::{Duration, Instant},
};

/// `--name value` from the command line, else `default`.
pub fn arg<T: FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0..=1) of `samples`.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

/// Time `f` `calls` times after `warmup` untimed runs.
pub async fn samples(warmup: usize, calls: usize, mut f: impl AsyncFnMut()) -> Vec<Duration> {
    for _ in 0..warmup {
        f().await;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        f().await;
        samples.push(started.elapsed());
    }
    samples
}

/// A memory figure of process `pid` from /proc, in KiB: `VmRSS` (resident
/// now) or `VmHWM` (the most it has been resident); `None` once it is gone.
pub fn memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    line.split_whitespace().next()?.parse().ok()
}

/// CPU time process `pid` has used so far, all its threads (user and
/// system; 10 ms ticks): what a figure costs the machine, which a busy
/// machine stretches far less than wall time.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command, which may hold spaces, in its parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are fields 14 and 15 of stat(5); `fields[0]` is 3.
    let (user, system) = (ticks(11)?, ticks(12)?);
    Some(Duration::from_millis((user + system) * 10))
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// `a / b` as `1.23x`.
pub fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64())
}

/// One row: metric, value, target, reference measured in the same run, ratio.
pub struct Row {
    /// What is measured.
    pub metric: String,
    /// The figure.
    pub value: String,
    /// The target, or `-`.
    pub target: String,
    /// The reference and its figure.
    pub reference: String,
    /// value / reference.
    pub ratio: String,
}

impl Row {
    /// A duration beside a reference `name` of the same run.
    pub fn timed(
        metric: &str,
        value: Duration,
        target: &str,
        name: &str,
        reference: Duration,
    ) -> Self {
        Self {
            metric: metric.to_owned(),
            value: ms(value),
            target: target.to_owned(),
            reference: format!("{name}: {}", ms(reference)),
            ratio: ratio(value, reference),
        }
    }
}

/// Print `rows` as a Markdown table under `title`.
pub fn print_table(title: &str, rows: &[Row]) {
    println!("{title}");
    println!("| metric | value | target | reference (same run) | ratio |");
    println!("|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            row.metric, row.value, row.target, row.reference, row.ratio
        );
    }
}
