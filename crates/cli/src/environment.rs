//! The state of the machine beside the numbers: what a reader needs to judge whether two reports
//! can be compared (hyperfine and criterion users expect it).
//!
//! Everything is read from `/proc`, `/sys` and `systemd-detect-virt` where they exist; a value
//! that cannot be read here is `None` and shown as "unavailable here", never guessed. The binary's
//! git commit and rustc version are recorded at build time (`build.rs`).

use std::fs;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// Machine, build and invocation of a measurement.
///
/// ```
/// use parbench_cli::environment::Environment;
/// let env = Environment::capture("none");
/// assert!(env.logical_cpus >= 1);
/// assert_eq!(env.pinning, "none");
/// assert!(env.date_utc.ends_with('Z'));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Host name, to tell machines apart in `compare`.
    pub hostname: Option<String>,
    /// CPU model (`model name` in /proc/cpuinfo).
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may use.
    pub logical_cpus: usize,
    /// Physical cores (distinct package/core ids in sysfs).
    pub physical_cores: Option<usize>,
    /// Simultaneous multithreading active.
    pub smt: Option<bool>,
    /// cpufreq scaling governor of CPU 0.
    pub governor: Option<String>,
    /// Lowest and highest CPU frequency of CPU 0, in MHz.
    pub frequency_mhz: Option<(f64, f64)>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Virtualisation or container (`systemd-detect-virt`, `/sys/hypervisor`, the cpuid
    /// hypervisor flag), `none` on bare metal.
    pub virtualization: Option<String>,
    /// Transparent huge pages mode (the selected value of `enabled`).
    pub transparent_hugepages: Option<String>,
    /// Kernel command-line options that change where the OS puts threads: `isolcpus`,
    /// `nohz_full`, `irqaffinity` and any `sched_*` option, such as the `sched_vcpu_pack=15` of a
    /// VM whose kernel packs threads onto few vCPUs — there two unpinned threads of one cell can
    /// share a CPU and run one after the other (`sweep --pin compact` avoids it).
    #[serde(default)]
    pub placement_options: Vec<String>,
    /// parbench-cli version.
    pub parbench_version: String,
    /// Git commit the binary was built from.
    pub git_commit: Option<String>,
    /// rustc that built the binary.
    pub rustc: Option<String>,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// Thread pinning of the executors' workers.
    pub pinning: String,
    /// When the measurement started, ISO 8601 UTC.
    pub date_utc: String,
}

impl Environment {
    /// Reads the environment of this process now; `pinning` is the sweep's `--pin`.
    pub fn capture(pinning: &str) -> Environment {
        let cpuinfo = read_trimmed("/proc/cpuinfo").unwrap_or_default();
        Environment {
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            cpu_model: cpuinfo_value(&cpuinfo, "model name"),
            logical_cpus: std::thread::available_parallelism().map_or(1, usize::from),
            physical_cores: physical_cores(),
            smt: smt_active(),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            frequency_mhz: frequency_range(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            virtualization: virtualization(&cpuinfo),
            transparent_hugepages: read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|modes| selected_mode(&modes)),
            placement_options: read_trimmed("/proc/cmdline")
                .map(|cmdline| placement_options(&cmdline))
                .unwrap_or_default(),
            parbench_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit: option_env!("PARBENCH_GIT_COMMIT").map(str::to_owned),
            rustc: option_env!("PARBENCH_RUSTC_VERSION").map(str::to_owned),
            command_line: std::env::args().collect(),
            pinning: pinning.to_owned(),
            date_utc: iso8601_utc(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
        }
    }

    /// A few lines for people, above a table (no trailing newline).
    ///
    /// ```
    /// use parbench_cli::environment::Environment;
    /// let lines = Environment::default().lines();
    /// assert!(lines[0].contains("CPU unavailable here"));
    /// ```
    pub fn lines(&self) -> Vec<String> {
        let unknown = || "unavailable here".to_owned();
        let smt = match self.smt {
            Some(true) => "SMT on".to_owned(),
            Some(false) => "SMT off".to_owned(),
            None => "SMT unavailable here".to_owned(),
        };
        let placement = if self.placement_options.is_empty() {
            String::new()
        } else {
            format!(
                ", thread placement options {}",
                self.placement_options.join(" ")
            )
        };
        let frequency = self
            .frequency_mhz
            .map_or_else(unknown, |(low, high)| format!("{low:.0}–{high:.0} MHz"));
        vec![
            format!(
                "machine: {} ({}), CPU {}, {} logical CPUs, {} physical cores, {smt}",
                self.hostname.clone().unwrap_or_else(unknown),
                self.virtualization.as_deref().map_or_else(
                    || "virtualisation unavailable here".to_owned(),
                    |v| { format!("virtualisation: {v}") }
                ),
                self.cpu_model.clone().unwrap_or_else(unknown),
                self.logical_cpus,
                self.physical_cores
                    .map_or_else(unknown, |cores| cores.to_string()),
            ),
            format!(
                "system: Linux {}, governor {}, frequency {frequency}, THP {}{placement}",
                self.kernel.clone().unwrap_or_else(unknown),
                self.governor.clone().unwrap_or_else(unknown),
                self.transparent_hugepages.clone().unwrap_or_else(unknown),
            ),
            format!(
                "build: parbench-cli {} (commit {}), {}; pin {}; started {}",
                self.parbench_version,
                self.git_commit.clone().unwrap_or_else(unknown),
                self.rustc
                    .clone()
                    .unwrap_or_else(|| "rustc unavailable here".to_owned()),
                self.pinning,
                self.date_utc,
            ),
            format!("command: {}", self.command_line.join(" ")),
        ]
    }

    /// A warning for stderr when the kernel packs threads onto few CPUs (a `sched_*pack*`
    /// placement option) and the workers are not pinned: two threads of one cell can then share
    /// a CPU and run in turn, which on the fourth VM made a third of the 2-thread samples about
    /// as slow as one thread.
    ///
    /// ```
    /// use parbench_cli::environment::Environment;
    /// let packing = Environment {
    ///     placement_options: vec!["sched_vcpu_pack=15".into()],
    ///     pinning: "none".into(),
    ///     ..Environment::default()
    /// };
    /// assert!(packing.placement_warning().unwrap().contains("--pin compact"));
    /// let pinned = Environment { pinning: "compact".into(), ..packing.clone() };
    /// assert_eq!(pinned.placement_warning(), None);
    /// assert_eq!(Environment::default().placement_warning(), None);
    /// ```
    pub fn placement_warning(&self) -> Option<String> {
        let packing = self.placement_options.iter().find(|option| {
            let name = option.split('=').next().unwrap_or_default();
            name.starts_with("sched_") && name.contains("pack")
        })?;
        (self.pinning == "none").then(|| {
            format!(
                "note: the OS kernel packs threads onto few CPUs ({packing}): two threads of a cell \
                 can share one and run in turn; --pin compact places every thread of a cell on \
                 a CPU of its own"
            )
        })
    }

    /// A short label for a column of `compare`: host, CPU and commit.
    ///
    /// ```
    /// use parbench_cli::environment::Environment;
    /// let env = Environment { hostname: Some("box".into()), ..Default::default() };
    /// assert!(env.label().starts_with("box"));
    /// ```
    pub fn label(&self) -> String {
        format!(
            "{} · {} · {}",
            self.hostname.as_deref().unwrap_or("host?"),
            self.cpu_model.as_deref().unwrap_or("CPU?"),
            self.git_commit.as_deref().unwrap_or("commit?")
        )
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The value of the first `key : value` line of /proc/cpuinfo.
fn cpuinfo_value(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == key).then(|| value.trim().to_owned())
    })
}

/// Distinct (package, core) pairs of the online CPUs in sysfs.
fn physical_cores() -> Option<usize> {
    let mut cores = std::collections::BTreeSet::new();
    for entry in fs::read_dir("/sys/devices/system/cpu").ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(number) = name.strip_prefix("cpu") else {
            continue;
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let topology = entry.path().join("topology");
        let read = |file: &str| fs::read_to_string(topology.join(file)).ok();
        if let (Some(package), Some(core)) = (read("physical_package_id"), read("core_id")) {
            cores.insert((package.trim().to_owned(), core.trim().to_owned()));
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

fn smt_active() -> Option<bool> {
    match read_trimmed("/sys/devices/system/cpu/smt/active")?.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// cpuinfo_min_freq / cpuinfo_max_freq of CPU 0 (kHz in sysfs).
fn frequency_range() -> Option<(f64, f64)> {
    let read = |file: &str| -> Option<f64> {
        read_trimmed(&format!("/sys/devices/system/cpu/cpu0/cpufreq/{file}"))?
            .parse::<f64>()
            .ok()
    };
    Some((
        read("cpuinfo_min_freq")? / 1000.0,
        read("cpuinfo_max_freq")? / 1000.0,
    ))
}

/// What `systemd-detect-virt` says, else Xen's `/sys/hypervisor/type`, else the cpuid
/// hypervisor flag (which says *that* there is one, not which).
fn virtualization(cpuinfo: &str) -> Option<String> {
    if let Ok(out) = Command::new("systemd-detect-virt").output() {
        // It exits 1 with "none" on bare metal: the text is the answer either way.
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !text.is_empty() {
            return Some(text);
        }
    }
    if let Some(kind) = read_trimmed("/sys/hypervisor/type") {
        return Some(kind);
    }
    let flags = cpuinfo_value(cpuinfo, "flags")?;
    Some(if flags.split_whitespace().any(|f| f == "hypervisor") {
        "yes (cpuid hypervisor flag)".to_owned()
    } else {
        "none (no cpuid hypervisor flag)".to_owned()
    })
}

/// The options of a kernel command line that change where threads run (see
/// [`Environment::placement_options`]); what follows `--` is for init, not the kernel.
fn placement_options(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .take_while(|&word| word != "--")
        .filter(|word| {
            let name = word.split('=').next().unwrap_or_default();
            matches!(name, "isolcpus" | "nohz_full" | "irqaffinity") || name.starts_with("sched_")
        })
        .map(str::to_owned)
        .collect()
}

/// The bracketed choice of a sysfs mode list: `always [madvise] never` → `madvise`.
fn selected_mode(modes: &str) -> Option<String> {
    let start = modes.find('[')?;
    let end = start + modes[start..].find(']')?;
    Some(modes[start + 1..end].to_owned())
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian calendar).
///
/// ```
/// use parbench_cli::environment::iso8601_utc;
/// assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
/// assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00Z");
/// ```
pub fn iso8601_utc(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let seconds = unix_seconds % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_instants() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1700000000` = Tue Nov 14 22:13:20 UTC 2023.
        assert_eq!(iso8601_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        // 2100 is not a leap year: 2100-03-01 follows 2100-02-28.
        assert_eq!(iso8601_utc(4_107_456_000), "2100-02-28T00:00:00Z");
        assert_eq!(iso8601_utc(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn sysfs_modes_and_cpuinfo_lines_are_parsed() {
        assert_eq!(
            selected_mode("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_mode("no brackets"), None);
        let cpuinfo =
            "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu hypervisor sse\n";
        assert_eq!(
            cpuinfo_value(cpuinfo, "model name").as_deref(),
            Some("AMD EPYC 7B13")
        );
        assert_eq!(cpuinfo_value(cpuinfo, "missing"), None);
    }

    #[test]
    fn placement_options_are_picked_from_the_kernel_command_line() {
        let cmdline = "console=ttyS0 quiet isolcpus=2-3 sched_vcpu_pack=15 nohz_full=2 \
                       rdinit=/init -- --sched_fake=1";
        assert_eq!(
            placement_options(cmdline),
            ["isolcpus=2-3", "sched_vcpu_pack=15", "nohz_full=2"]
        );
        assert!(placement_options("ro quiet").is_empty());
        let env = Environment {
            placement_options: vec!["sched_vcpu_pack=15".into()],
            ..Environment::default()
        };
        assert!(env.lines()[1].ends_with(", thread placement options sched_vcpu_pack=15"));
        assert!(!Environment::default().lines()[1].contains("placement"));
        // Reports written before the field existed still load.
        let mut json = serde_json::to_value(&env).unwrap();
        json.as_object_mut().unwrap().remove("placement_options");
        let older: Environment = serde_json::from_value(json).unwrap();
        assert!(older.placement_options.is_empty());
    }

    #[test]
    fn unreadable_values_say_so_instead_of_guessing() {
        let text = Environment::default().lines().join("\n");
        assert!(text.contains("CPU unavailable here"));
        assert!(text.contains("governor unavailable here"));
        assert!(text.contains("commit unavailable here"));
    }

    #[test]
    fn capture_reads_this_machine() {
        let env = Environment::capture("compact");
        assert!(env.logical_cpus >= 1);
        assert_eq!(env.pinning, "compact");
        assert!(!env.command_line.is_empty());
        if let Some(cores) = env.physical_cores {
            assert!(cores >= 1);
        }
    }
}
