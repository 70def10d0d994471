//! Draws the Plans screen (wasm32 only): the peer's plans as buttons (a bad file with its
//! error, not runnable), or the plan run followed: its progress line, the table filling in row
//! by row (the shared HTML table the plan's page shows), the verdict badge at its end (the
//! Result screen's classes) and the link to its page.

use perfpeer_shared::plan_progress::{CaseRow, Spread};
use perfpeer_shared::verdict::Outcome;

use crate::dom::{el, set_text, show};
use crate::present::escape;
use crate::store::{Model, PlanRun, duration_words};

/// Brings the Plans screen up to date; `drawn` is the table (or list) as last drawn, so a
/// render that changes nothing does not redraw it.
pub fn render(model: &Model, drawn: &mut String) {
    let plans = &model.plans;
    show("plan-run", plans.run.is_some());
    show("plans-box", plans.run.is_none());
    match &plans.run {
        Some(run) => render_run(run, drawn),
        None => render_list(model, drawn),
    }
}

fn render_list(model: &Model, drawn: &mut String) {
    let status = match &model.plans.list {
        None => "Asking the peer for its plans…".to_string(),
        Some(list) if list.is_empty() => {
            "This peer offers no plans: start it with perfpeer serve --plans DIR.".into()
        }
        Some(list) => format!("{} plans on this peer. Tap one to run it.", list.len()),
    };
    set_text("plans-status", &status);
    let html: String = model
        .plans
        .list
        .iter()
        .flatten()
        .map(|p| match &p.error {
            Some(e) => format!(
                "<li class='bad'>{}: {}</li>",
                escape(&p.name),
                escape(e)
            ),
            None => format!(
                "<li><button type='button' data-plan='{0}'>{1} · {2} cases · about {3}</button></li>",
                escape(&p.name),
                escape(if p.title.is_empty() { &p.name } else { &p.title }),
                p.cases,
                duration_words(p.eta_s)
            ),
        })
        .collect();
    let key = format!("list:{html}");
    if *drawn != key {
        el("plans-list").set_inner_html(&html);
        *drawn = key;
    }
}

fn render_run(run: &PlanRun, drawn: &mut String) {
    set_text("plan-title", &format!("Plan {}", run.name));
    set_text("plan-progress", &run.progress);
    let table = table(&run.rows);
    if *drawn != table {
        el("plan-table").set_inner_html(&table);
        *drawn = table;
    }
    let outcome = run.end.as_ref().and_then(|e| e.outcome);
    show("plan-verdict", outcome.is_some());
    if let Some(outcome) = outcome {
        let _ =
            el("plan-verdict").set_attribute("class", &format!("card verdict {}", outcome.name()));
        set_text("plan-badge", outcome.word());
    }
    show("plan-stop", run.running() && !run.stopping);
    show("plan-list-again", !run.running());
    let kept = run.end.as_ref().and_then(|e| e.result_id.as_deref());
    show("plan-link", kept.is_some());
    if let Some(id) = kept {
        let _ = el("plan-link").set_attribute("href", &format!("/r/{id}"));
    }
}

/// The finished cases as the plan page's table shows them (its columns and classes): the
/// headline's median and range, the repeats that ran (each kept one linked), the verdict.
fn table(rows: &[CaseRow]) -> String {
    let mut h = String::from(
        "<table class='plan'><tr><th>Case</th><th>Median</th><th>Range</th><th>Runs</th>\
         <th>Verdict</th></tr>",
    );
    for row in rows {
        let metric = row.metric;
        let shown = |pick: &dyn Fn(&Spread) -> String| {
            row.headline.as_ref().map_or_else(|| "-".into(), pick)
        };
        let links: String = row
            .result_ids
            .iter()
            .enumerate()
            .map(|(i, id)| format!(" <a href='/r/{}'>{}</a>", escape(id), i + 1))
            .collect();
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}/{}{links}</td><td class='{}'>{}</td></tr>",
            escape(&row.label),
            shown(&|s| metric.show(s.median)),
            shown(&|s| format!("{} – {}", metric.show(s.min), metric.show(s.max))),
            row.ran,
            row.repeats,
            row.outcome.map_or("", Outcome::name),
            escape(&row.verdict_line),
        ));
    }
    h.push_str("</table>");
    h
}
