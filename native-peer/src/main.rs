//! The `perfpeer` binary: parses the command line (its role taken from the program name, so an
//! `iperf3`, `iperf` or `ttcp` symlink is that tool) and runs it; the exit code says how it
//! went (2 for a usage error, 1 for a failed or partial test). Everything else is the library.

use std::process::ExitCode;

use perfpeer::{UsageError, parse_args, run};

fn main() -> ExitCode {
    let args = parse_args();
    match run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("perfpeer: error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
