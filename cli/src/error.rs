//! The command's errors: one line each, naming the file and, where there is one, the line or the
//! element that is wrong.

use std::fmt;
use std::path::Path;

use slabtree::LoadError;

/// A failure that ends the command with exit code 1. Its text is one line, printed after
/// `error: `.
#[derive(Debug)]
pub struct CliError(String);

impl CliError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> CliError {
        CliError(message.into())
    }

    /// A failed read or write of `path`.
    pub fn io(path: &Path, action: &str, e: &std::io::Error) -> CliError {
        CliError(format!("{}: cannot {action} the file: {e}", path.display()))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

impl From<LoadError> for CliError {
    fn from(e: LoadError) -> CliError {
        CliError(e.to_string())
    }
}

/// The result of a command.
pub type CliResult<T> = Result<T, CliError>;
