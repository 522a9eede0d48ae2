//! `parbench-cli topology`: packages → cores → PUs of this machine, of a synthetic description or
//! of an hwloc XML export (parsing and rendering are `parbench-mapper`'s).
//!
//! A planned machine (synthetic or XML) gets a note that binding threads on it does nothing, so
//! nobody mistakes its layout for where threads will actually run.

use std::path::PathBuf;

use clap::Args;
use parbench_mapper::Topology;

use crate::commands::write_stdout;
use crate::error::CliError;

/// Options of `parbench-cli topology`. Without any, this machine's topology is printed.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from(["parbench-cli", "topology", "--synthetic", "core:2 pu:2"])?;
/// let Command::Topology(args) = cli.command else { unreachable!() };
/// assert_eq!(args.synthetic.as_deref(), Some("core:2 pu:2"));
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// An hwloc synthetic description of a machine to plan for, e.g. "pack:2 core:4 pu:2" [at
    /// most 8192 PUs].
    #[arg(long, value_name = "DESC", conflicts_with = "xml")]
    pub synthetic: Option<String>,
    /// An hwloc XML export (`lstopo machine.xml`) of a machine to plan for.
    #[arg(long, value_name = "FILE")]
    pub xml: Option<PathBuf>,
}

impl TopologyArgs {
    /// The topology the options name.
    ///
    /// # Errors
    /// [`CliError::Topology`] for a malformed description, a missing or invalid XML file, or
    /// when hwloc cannot discover this machine.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_cli::topology::TopologyArgs;
    /// let args = TopologyArgs { synthetic: Some("pack:1 core:4 pu:2".into()), xml: None };
    /// assert_eq!(args.topology()?.pus().len(), 8);
    /// # Ok::<(), parbench_cli::error::CliError>(())
    /// ```
    pub fn topology(&self) -> Result<Topology, CliError> {
        Ok(match (&self.synthetic, &self.xml) {
            (Some(description), _) => Topology::synthetic(description)?,
            (None, Some(path)) => Topology::from_xml_file(path)?,
            (None, None) => Topology::this_system()?,
        })
    }
}

/// Prints the topology `args` name.
///
/// # Errors
/// See [`TopologyArgs::topology`]; [`CliError::Write`] when stdout fails.
pub fn run(args: &TopologyArgs) -> Result<(), CliError> {
    let topology = args.topology()?;
    write_stdout(|out| {
        write!(out, "{topology}")?;
        if !topology.is_this_system() {
            writeln!(
                out,
                "note: a planned machine, not this one: binding threads to its PUs does nothing"
            )?;
        }
        Ok(())
    })
}
