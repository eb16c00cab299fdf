//! The one exit-code map: every error a command can end with, and the code the process
//! leaves with (docs/cli.md, "Exit codes"). No other file decides a code.

use crate::Error;
use crate::history::HistoryError;
use crate::init::InitError;
use crate::interop::InteropError;
use crate::report::ReportError;
use crate::run::{RunError, RunSummary};
use crate::rundir::RunDirError;
use crate::sim::SimError;
use crate::tune::TuneError;
use crate::twin::TwinError;

/// How a command ends, as the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Success.
    Ok,
    /// Finished, but with findings (a cell invalid or failed, a regression), stopped by a
    /// signal, or an output that cannot be written.
    Findings,
    /// Bad usage or bad input: the input must change; nothing was run.
    BadInput,
    /// The engine could not be launched, reached or kept alive.
    Engine,
    /// The history database cannot be opened, queried, or was written by a newer benchspec.
    Storage,
    /// A second stop signal: leave at once.
    Killed,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Findings => 1,
            Exit::BadInput => 2,
            Exit::Engine => 3,
            Exit::Storage => 4,
            Exit::Killed => 130,
        }
    }

    /// `Ok` when nothing was found, else `Findings`.
    pub fn findings(found: bool) -> Exit {
        if found { Exit::Findings } else { Exit::Ok }
    }
}

/// What a command ended with, as an [`Exit`]. Implemented here, and only here, for every
/// error a command returns.
pub trait Exits {
    /// The exit this ends the process with.
    fn exit(&self) -> Exit;
}

impl Exits for Error {
    fn exit(&self) -> Exit {
        match self {
            Error::Spec(_) | Error::Plan(_) => Exit::BadInput,
            Error::Sim(e) => e.exit(),
            Error::Run(e) => e.exit(),
            Error::Report(e) => e.exit(),
            Error::RunDir(e) => e.exit(),
            Error::Init(e) => e.exit(),
            Error::History(e) => e.exit(),
            Error::Interop(e) => e.exit(),
            Error::Twin(e) => e.exit(),
            Error::Tune(e) => e.exit(),
            Error::Write { .. } | Error::Json(_) => Exit::Findings,
        }
    }
}

impl Exits for RunSummary {
    /// Findings when a cell is invalid or failed, or when no cell was measured at all (every
    /// cell skipped): a run that judged nothing is not a pass.
    fn exit(&self) -> Exit {
        Exit::findings(self.invalid + self.failed > 0 || self.valid == 0)
    }
}

impl Exits for RunDirError {
    fn exit(&self) -> Exit {
        match self {
            RunDirError::Write { .. } => Exit::Findings,
            _ => Exit::BadInput,
        }
    }
}

impl Exits for RunError {
    fn exit(&self) -> Exit {
        match self {
            RunError::Engine(_) | RunError::Config(_) | RunError::EngineLost { .. } => Exit::Engine,
            RunError::RunDir(e) => e.exit(),
            RunError::Dataset(_)
            | RunError::AdapterNotServed { .. }
            | RunError::Trace(_)
            | RunError::Tokenizer(_)
            | RunError::StartAtSpan(_)
            | RunError::StartAtInstant(_)
            | RunError::StartAtPast { .. } => Exit::BadInput,
            RunError::Interrupted { .. } | RunError::InterruptedEarly { .. } => Exit::Findings,
        }
    }
}

impl Exits for SimError {
    fn exit(&self) -> Exit {
        match self {
            SimError::UnknownProfile { .. }
            | SimError::Twin { .. }
            | SimError::TwinParams(_)
            | SimError::TwinCost { .. }
            | SimError::TwinLimit { .. }
            | SimError::ImageUrl { .. }
            | SimError::ImageFormat { .. }
            | SimError::ImageTokensArg { .. }
            | SimError::AcceptanceArg { .. } => Exit::BadInput,
            SimError::Bind { .. } => Exit::Engine,
        }
    }
}

impl Exits for ReportError {
    fn exit(&self) -> Exit {
        match self {
            ReportError::Write { .. } => Exit::Findings,
            ReportError::RunDir(e) => e.exit(),
            _ => Exit::BadInput,
        }
    }
}

impl Exits for InitError {
    fn exit(&self) -> Exit {
        match self {
            InitError::Unreachable { .. } | InitError::NotOpenAi { .. } | InitError::Runtime(_) => {
                Exit::Engine
            }
            InitError::Write { .. } => Exit::Findings,
            _ => Exit::BadInput,
        }
    }
}

impl Exits for HistoryError {
    fn exit(&self) -> Exit {
        match self {
            HistoryError::Open { .. } | HistoryError::Query { .. } | HistoryError::Newer { .. } => {
                Exit::Storage
            }
            HistoryError::Write { .. } => Exit::Findings,
            HistoryError::RunDir(e) => e.exit(),
            HistoryError::Usage(_)
            | HistoryError::Render(_)
            | HistoryError::Missing { .. }
            | HistoryError::Predicted { .. }
            | HistoryError::NoMatch(_) => Exit::BadInput,
        }
    }
}

impl Exits for InteropError {
    fn exit(&self) -> Exit {
        match self {
            InteropError::Write { .. } => Exit::Findings,
            InteropError::RunDir(e) => e.exit(),
            _ => Exit::BadInput,
        }
    }
}

impl Exits for TwinError {
    fn exit(&self) -> Exit {
        match self {
            TwinError::Write { .. } | TwinError::Simulate(_) => Exit::Findings,
            TwinError::RunDir(e) => e.exit(),
            _ => Exit::BadInput,
        }
    }
}

impl Exits for TuneError {
    fn exit(&self) -> Exit {
        match self {
            TuneError::Usage(_) => Exit::BadInput,
            TuneError::Interrupted(_) => Exit::Findings,
            TuneError::Run { source, .. } => source.exit(),
            TuneError::RunDir(e) => e.exit(),
            TuneError::Twin(e) => e.exit(),
            TuneError::File { .. } => Exit::Findings,
        }
    }
}

#[cfg(test)]
#[path = "exit_tests.rs"]
mod tests;
