//! What every client subcommand does while a test runs: Ctrl-C as cancellation, one loop that
//! hands live events to a printer, the stock-tool servers' event loop, and the exit code of a
//! finished test.

use std::io;
use std::process::ExitCode;

use anyhow::Context;
use perfpeer_shared::report::TestResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::output::Printer;
use crate::session::events::TestEvent;

/// A token cancelled by Ctrl-C: the test then ends as cancelled, with both ends' figures so
/// far (the far end is asked for its finals). A second Ctrl-C quits at once (exit 130, as a
/// shell reports SIGINT) for when the far end does not answer.
pub(super) fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    crate::util::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("perfpeer: interrupted again: quitting without the final figures");
                std::process::exit(130);
            }
        }
    });
    cancel
}

/// Runs a stock-tool server (`perfpeer iperf3 -s`, `perfpeer iperf -s`) until it ends or Ctrl-C
/// stops it, handing each of its events to `print`.
pub(super) async fn serve_printing<E, F>(
    port: u16,
    serve: impl FnOnce(CancellationToken) -> F,
    mut events: mpsc::UnboundedReceiver<E>,
    mut print: impl FnMut(E),
) -> anyhow::Result<ExitCode>
where
    F: std::future::Future<Output = std::io::Result<()>>,
{
    let serve = serve(cancel_on_ctrl_c());
    tokio::pin!(serve);
    loop {
        tokio::select! {
            r = &mut serve => {
                while let Ok(ev) = events.try_recv() {
                    print(ev);
                }
                r.with_context(|| format!("cannot serve on port {port}"))?;
                return Ok(ExitCode::SUCCESS);
            }
            Some(ev) = events.recv() => print(ev),
        }
    }
}

/// Runs a client test: `start` gets the live-event sender and a token Ctrl-C cancels; each
/// event goes to `on_event` while the test runs (and those still queued after it ends). Every
/// client subcommand prints through this one loop.
pub(super) async fn run_printing<T, F>(
    start: impl FnOnce(mpsc::UnboundedSender<TestEvent>, CancellationToken) -> F,
    mut on_event: impl FnMut(&TestEvent) -> io::Result<()>,
) -> anyhow::Result<T>
where
    F: Future<Output = T>,
{
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let test = start(events_tx, cancel_on_ctrl_c());
    tokio::pin!(test);
    let outcome = loop {
        tokio::select! {
            r = &mut test => break r,
            Some(ev) = events.recv() => on_event(&ev)?,
        }
    };
    while let Ok(ev) = events.try_recv() {
        on_event(&ev)?;
    }
    Ok(outcome)
}

/// Prints the result (or the error in JSON styles) and picks the exit code.
pub(super) fn finish(
    printer: &mut Printer<'_>,
    outcome: anyhow::Result<TestResult>,
    peer: &str,
) -> anyhow::Result<ExitCode> {
    match outcome {
        Ok(result) => {
            printer.result(&result)?;
            Ok(match result.status.ended_early() {
                None => super::verdict_code(result.verdict().as_ref()),
                Some(_) => ExitCode::from(1),
            })
        }
        Err(e) => {
            printer.error(&e.to_string())?;
            Err(in_context(e, &format!("test against {peer} failed")))
        }
    }
}

/// `e` with `context` before it, unless it already names the target it could not reach (`cannot
/// reach pc:5210: …`): the address is said once.
pub(super) fn in_context(e: anyhow::Error, context: &str) -> anyhow::Error {
    let names_target = matches!(
        e.downcast_ref::<crate::session::SessionError>(),
        Some(crate::session::SessionError::Unreachable { .. })
    );
    if names_target {
        e
    } else {
        e.context(context.to_string())
    }
}
