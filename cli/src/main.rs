//! `slabtree`: render a mesh, trace a ray file, benchmark ray kinds or print BVH figures.
//! Run `slabtree --help`; with no arguments it renders a built-in scene to `render.png`.

use slabtree_cli as cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // A bug should still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error (a bug in slabtree{place}): {msg}");
    }));
    match cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
