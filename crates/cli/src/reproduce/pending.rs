//! Studies listed by `reproduce --list` whose experiment is not wired yet: their published data is
//! in place, and running them says "not yet implemented" (exit code 2) instead of measuring.

use crate::error::CliError;
use crate::reproduce::report::StudyReport;
use crate::reproduce::{Scale, Study, StudyRun};

/// A study with published data but no experiment yet.
#[derive(Debug)]
pub struct PendingStudy {
    name: &'static str,
    published: &'static str,
}

impl Study for PendingStudy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn published_json(&self) -> &'static str {
        self.published
    }

    fn implemented(&self) -> bool {
        false
    }

    fn scaling(&self, _: Scale) -> String {
        "not yet implemented".to_owned()
    }

    fn run(&self, _: &mut StudyRun) -> Result<StudyReport, CliError> {
        Err(CliError::Usage(format!(
            "study `{}` is not yet implemented",
            self.name
        )))
    }
}
