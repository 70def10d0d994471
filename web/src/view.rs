//! Draws a [`Model`] into the page's markup (wasm32 only): shows the front screen, fills texts,
//! lists and the chart. It reads the model and never changes it; the heavy result rendering is
//! redone only when a different result (or its newly saved notes) arrives.

use perfpeer_shared::control::PeerInfo;
use perfpeer_shared::format::{cbr, sweep as sweep_text};
use perfpeer_shared::history::{Notes, ResultKind};
use perfpeer_shared::report::{IntervalReport, PeerRole, Sending, TestResult, TestStatus};
use perfpeer_shared::spec::{EndCondition, Protocol};
use perfpeer_shared::verdict::Verdict;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, HtmlElement, Url};

use crate::dom::{by_id, el, set_lines, set_text, set_value, show, toggle_class, value};
use crate::form::{Choice, EndsAfter, FormInput, FormRows, RunKind};
use crate::history::{self, Filter};
use crate::present::{self, escape};
use crate::store::{
    FinishedLatency, FinishedSweep, LatencyRun, Link, Model, Progress, RunState, Screen, Shown,
};
use perfpeer_shared::format::latency as latency_text;
use perfpeer_shared::format::layout::Layout;
use perfpeer_shared::format::{chart, html};

/// What the view keeps between renders.
#[derive(Default)]
pub struct View {
    /// The run whose result is drawn (a test's, sweep's or latency run's id) with the notes
    /// drawn into its downloaded file: the heavy rendering is redone only when another one, or
    /// newly saved notes, come.
    shown: Option<(String, Notes)>,
    latency_json_url: Option<String>,
    latency_html_url: Option<String>,
    /// Probes and phases drawn on the Running screen last (redrawn when they change).
    run_latency_key: (usize, usize, usize),
    json_url: Option<String>,
    html_url: Option<String>,
    sweep_json_url: Option<String>,
    sweep_text_url: Option<String>,
    sweep_html_url: Option<String>,
    history_html: String,
    recent_html: String,
    overlay_key: String,
    congestion_html: String,
    /// The Peer screen's radios as last drawn (redrawn when the peer says something new).
    radios_text: String,
    /// The Peer screen's addresses and running tests as last drawn: redrawn only when they
    /// change, so the refresh every 2 s neither moves the focus nor eats a tap.
    peer_html: [String; 2],
    /// The result and notes the notes editor was last filled from (typing is not overwritten).
    notes_key: Option<(String, perfpeer_shared::history::Notes)>,
    /// The screen in front at the last render: focus moves to a new screen's heading.
    shown_screen: Option<Screen>,
    /// The Plans screen's list or table as last drawn.
    #[cfg(feature = "plans")]
    plans_html: String,
}

const SCREENS: [(Screen, &str, &str); 7] = [
    (Screen::Connect, "screen-connect", "nav-connect"),
    (Screen::Peer, "screen-peer", "nav-peer"),
    (Screen::NewTest, "screen-new", "nav-new"),
    (Screen::Running, "screen-run", "nav-run"),
    (Screen::Result, "screen-result", "nav-result"),
    (Screen::History, "screen-history", "nav-history"),
    (Screen::Plans, "screen-plans", "nav-plans"),
];

impl View {
    /// Brings the page up to date with `model`.
    pub fn render(&mut self, model: &Model) {
        for (screen, section, nav) in SCREENS {
            show(section, model.screen == screen);
            toggle_class(nav, "active", model.screen == screen);
            let _ = if model.screen == screen {
                el(nav).set_attribute("aria-current", "page")
            } else {
                el(nav).remove_attribute("aria-current")
            };
        }
        if self.shown_screen != Some(model.screen) {
            // A screen change moves focus to its heading (a screen reader reads where it is;
            // the keyboard goes on from there) and names it in the title.
            if self.shown_screen.is_some()
                && let Some(section) = SCREENS.iter().find(|s| s.0 == model.screen)
                && let Ok(Some(h)) = el(section.1).query_selector("h2")
                && let Ok(h) = h.dyn_into::<HtmlElement>()
            {
                let _ = h.focus();
            }
            self.shown_screen = Some(model.screen);
        }
        crate::dom::document().set_title(&page_title(model));
        // Connect is a screen for before the token works; later it only takes room.
        show(
            "nav-connect",
            !(model.authorized && model.link == Link::Open),
        );
        show("nav-run", model.run.is_some() || model.attaching.is_some());
        show("nav-result", model.has_result());
        show("nav-history", model.authorized);
        show("open-history", model.authorized);
        // The UI a DUT build embeds has no Plans screen (a DUT build runs no plans).
        let plans = cfg!(feature = "plans") && model.authorized;
        show("nav-plans", plans);
        show("open-plans", plans);
        #[cfg(feature = "plans")]
        if model.screen == Screen::Plans {
            crate::plans_view::render(model, &mut self.plans_html);
        }
        render_link(model);
        render_connect(model);
        if let Some(peer) = &model.peer {
            render_peer(peer, model, &mut self.peer_html);
            self.render_radios(peer);
            let options: String =
                std::iter::once("<option value=''>kernel default</option>".to_string())
                    .chain(
                        peer.congestion_controls
                            .iter()
                            .map(|c| format!("<option value='{0}'>{0}</option>", escape(c))),
                    )
                    .collect();
            if options != self.congestion_html {
                let keep = value("f-congestion");
                el("f-congestion").set_inner_html(&options);
                set_value("f-congestion", &keep);
                self.congestion_html = options;
            }
        }
        render_quick(model);
        render_first_test(model);
        render_form_error(model);
        match &model.preset_note {
            Some(note) => set_text("preset-note", note),
            None => set_text("preset-note", ""),
        }
        show("preset-note", model.preset_note.is_some());
        if model.run.is_none()
            && let Some(id) = &model.attaching
        {
            set_text("run-title", &format!("Following test {id}…"));
        }
        if let Some(run) = &model.run {
            render_run(run);
            match &run.progress {
                Progress::Latency(latency) => self.render_run_latency(latency),
                Progress::Test | Progress::Sweep(_) => {}
            }
        }
        let (test, sweep, latency) = match &model.shown {
            Some(Shown::Test(_)) => (true, false, false),
            Some(Shown::Sweep(_)) => (false, true, false),
            Some(Shown::Latency(_)) => (false, false, true),
            None => (false, false, false),
        };
        show("result-sweep", sweep);
        show("result-latency", latency);
        show("result-headline", test);
        show("result-test", !sweep && !latency);
        // Its notes go into "Download as a file", as on the peer's page `/r/<id>`.
        let notes = model.shown_notes();
        match &model.shown {
            Some(Shown::Test(result)) => self.render_result(result, model.tab, notes),
            Some(Shown::Sweep(sweep)) => self.render_sweep(sweep, notes),
            Some(Shown::Latency(latency)) => self.render_latency(latency, notes),
            None => {}
        }
        render_share(model);
        self.render_notes(model);
        show(
            "run-again",
            model.last_input.is_some() && model.run.is_none() && model.screen == Screen::Result,
        );
        let options: String = model
            .recent_peers
            .iter()
            .map(|p| format!("<option value='{}'>", escape(p)))
            .collect();
        if options != self.recent_html {
            el("recent-peers").set_inner_html(&options);
            self.recent_html = options;
        }
        if model.screen == Screen::History {
            self.render_history(model);
        }
        match &model.notice {
            Some(n) => {
                set_text("notice-title", &n.title);
                set_text("notice-detail", &n.detail);
                set_text("notice-hint", &n.hint);
                show("notice", true);
            }
            None => show("notice", false),
        }
    }

    /// The Peer screen's radios (`store::radios_text`).
    fn render_radios(&mut self, peer: &PeerInfo) {
        let text = crate::store::radios_text(peer);
        if text != self.radios_text {
            set_lines("peer-wifi", &text);
            show("peer-wifi-box", !text.is_empty());
            self.radios_text = text;
        }
    }

    fn render_sweep(&mut self, done: &FinishedSweep, notes: Notes) {
        let drawn = (done.sweep_id.clone(), notes);
        if self.shown.as_ref() == Some(&drawn) {
            return;
        }
        let sweep = &done.result;
        let sizes: Vec<u32> = sweep.points.iter().map(|p| p.len).collect();
        let title = format!(
            "{} → {}",
            present::describe_sweep(&done.spec, &sizes),
            done.context.other_peer
        );
        set_text("result-title", &title);
        render_verdict(None);
        el("sweep-rows").set_inner_html(&html::sweep_rows(&sweep.points));
        el("sweep-chart").set_inner_html(&sweep_text::svg(sweep));
        let text = sweep_text::text(sweep, done.spec.dccp.map(|d| d.service));
        set_lines("sweep-text", &text);
        let json = perfpeer_shared::format::pretty_json(sweep).unwrap_or_default();
        set_download(
            &mut self.sweep_json_url,
            "sweep-json-download",
            &json,
            "application/json",
            "perfpeer-sweep.json",
        );
        set_download(
            &mut self.sweep_text_url,
            "sweep-text-download",
            &text,
            "text/plain",
            "perfpeer-sweep.txt",
        );
        // A self-contained page, like a test's "Download as a file".
        set_download(
            &mut self.sweep_html_url,
            "sweep-html-download",
            &html::sweep_page(sweep, &title, &done.context, &drawn.1),
            "text/html",
            "perfpeer-sweep.html",
        );
        self.shown = Some(drawn);
    }

    /// A latency run while it runs: the phases so far as a table, and the timeline.
    fn render_run_latency(&mut self, run: &LatencyRun) {
        let live = &run.live;
        let key = (live.probes.len(), live.windows.len(), live.throughput.len());
        if key == self.run_latency_key {
            return;
        }
        self.run_latency_key = key;
        let Some(so_far) = live.snapshot(None) else {
            return;
        };
        el("run-latency-rows").set_inner_html(&latency_text::html_table_so_far(&so_far));
        el("run-chart").set_inner_html(&latency_text::svg_timeline(&so_far));
        el("run-latency-cdf").set_inner_html(&latency_text::svg_cdf(&so_far));
    }

    fn render_latency(&mut self, done: &FinishedLatency, notes: Notes) {
        let drawn = (done.latency_id.clone(), notes);
        if self.shown.as_ref() == Some(&drawn) {
            return;
        }
        let r = &done.result;
        let title = latency_text::title(r);
        let verdict = done.verdict();
        render_verdict(verdict.as_ref());
        set_text(
            "result-title",
            &format!("Latency under load → {}", r.target),
        );
        set_text("latency-headline", &present::latency_headline(r));
        el("latency-table").set_inner_html(&latency_text::html_table(r));
        el("latency-timeline").set_inner_html(&latency_text::svg_timeline(r));
        el("latency-cdf").set_inner_html(&latency_text::svg_cdf(r));
        set_lines("latency-text", &latency_text::text(r));
        let json = perfpeer_shared::format::pretty_json(r).unwrap_or_default();
        set_download(
            &mut self.latency_json_url,
            "latency-json-download",
            &json,
            "application/json",
            "perfpeer-latency.json",
        );
        set_download(
            &mut self.latency_html_url,
            "latency-html-download",
            &html::latency_page(r, &title, verdict.as_ref(), &drawn.1),
            "text/html",
            "perfpeer-latency.html",
        );
        self.shown = Some(drawn);
    }

    fn render_result(&mut self, result: &TestResult, selected: Layout, notes: Notes) {
        show("tab-stream", result.spec.protocol != Protocol::Tcp);
        for tab in Layout::ALL {
            let id = format!("tab-{}", tab.id());
            toggle_class(&id, "active", selected == tab);
            let _ = el(&id).set_attribute(
                "aria-selected",
                if selected == tab { "true" } else { "false" },
            );
            show(&format!("text-{}", tab.id()), selected == tab);
        }
        let drawn = (result.id.clone(), notes);
        if self.shown.as_ref() == Some(&drawn) {
            return;
        }
        set_text("result-title", &present::result_title(result));
        render_verdict(result.verdict().as_ref());
        let rows: String = present::summary(result)
            .iter()
            .map(|r| {
                format!(
                    "<div class='row'><dt>{}</dt><dd data-key='{}'>{}</dd></div>",
                    escape(&r.label),
                    escape(&r.key),
                    escape(&r.value)
                )
            })
            .collect();
        el("summary").set_inner_html(&rows);
        el("summary").set_attribute("data-test-id", &result.id).ok();
        set_text("result-headline", &present::headline(result));
        // A test that ended early is drawn over the time it ran, not the time asked for.
        let x_max = match result.status {
            TestStatus::Complete => result.spec.total_time().map(|d| d.as_secs_f64()),
            _ => None,
        };
        // With the Wi-Fi link on the same axes where a radio carried the test.
        el("result-chart").set_inner_html(&chart::svg_with_link(
            &chart::series(&result.local.intervals),
            &chart::wifi::Overlay::of_result(result),
            x_max,
        ));
        for tab in Layout::ALL {
            set_lines(&format!("text-{}", tab.id()), &tab.text(result));
        }
        let id = &result.id;
        let json = Layout::Json.text(result);
        set_download(
            &mut self.json_url,
            "json-download",
            &json,
            "application/json",
            &format!("perfpeer-{id}.json"),
        );
        // The same self-contained page the peer serves at /r/<id>, notes and tags included: it
        // opens offline from disk.
        let page = html::page(result, &drawn.1);
        set_download(
            &mut self.html_url,
            "html-download",
            &page,
            "text/html",
            &format!("perfpeer-{id}.html"),
        );
        self.shown = Some(drawn);
    }

    /// The notes card: the notes as kept; with the token, an editor filled from them whenever a
    /// different result or a newly saved version comes.
    fn render_notes(&mut self, model: &Model) {
        let share = model.shown_share();
        show(
            "notes",
            share.is_some_and(|s| model.authorized || !s.notes.is_empty()),
        );
        let Some(share) = share else { return };
        let tags: String = share
            .notes
            .tags
            .iter()
            .map(|t| format!("<span class='tag'>{}</span>", escape(t)))
            .collect();
        let text = escape(&share.notes.text);
        let shown = match (tags.is_empty(), text.is_empty()) {
            (true, true) => "<span class='hint'>None yet.</span>".to_string(),
            (false, true) => tags,
            (true, false) => text,
            (false, false) => format!("{tags}<br>{text}"),
        };
        el("notes-shown").set_inner_html(&shown);
        show("notes-edit", model.authorized);
        let key = (share.result_id.clone(), share.notes.clone());
        if self.notes_key.as_ref() != Some(&key) {
            set_value("notes-text", &share.notes.text);
            set_value("notes-tags", &share.notes.tags.join(" "));
            self.notes_key = Some(key);
        }
        set_text("notes-error", share.notes_error.as_deref().unwrap_or(""));
        show("notes-error", share.notes_error.is_some());
        show("notes-saved", share.notes_saved);
    }

    fn render_history(&mut self, model: &Model) {
        let h = &model.history;
        let tz = js_sys::Date::new_0().get_timezone_offset() as i32;
        let visible = h.visible();
        // A PC peer's list: filtered by the peer, a page at a time, the lab's with a lab store.
        #[cfg(feature = "lab-store")]
        let (whose, filtered, more) = {
            show("history-more", h.next.is_some());
            let lab = model.peer.as_ref().is_some_and(|p| p.lab_store.is_some());
            let f = &h.filter;
            (
                if lab { " in the lab store" } else { "" },
                !f.tag.is_empty() || f.since_ms.is_some() || !f.peer.trim().is_empty(),
                if h.next.is_some() { "+" } else { "" },
            )
        };
        #[cfg(not(feature = "lab-store"))]
        let (whose, filtered, more) = ("", false, "");
        let status = match (&h.error, h.loading) {
            (Some(e), _) => e.clone(),
            (None, true) => "Loading…".into(),
            (None, false) if h.entries.is_empty() && filtered => {
                format!("No results{whose} match the filters.")
            }
            (None, false) if h.entries.is_empty() => "No results kept on this peer yet.".into(),
            (None, false) => format!(
                "{} of {}{more} results{whose}. Tick two or more to overlay their throughput; tap one to open it.",
                visible.len(),
                h.entries.len()
            ),
        };
        set_text("history-status", &status);
        let rows: String = visible
            .iter()
            .map(|e| history_row(e, tz, h.picked.contains(&e.id)))
            .collect();
        if rows != self.history_html {
            el("history-list").set_inner_html(&rows);
            self.history_html = rows;
        }
        let _ = if h.picked.len() >= 2 {
            el("compare").remove_attribute("disabled")
        } else {
            el("compare").set_attribute("disabled", "")
        };
        let overlay = h.overlay(tz);
        let latency_overlay = h.latency_overlay(tz);
        let shown = overlay.is_some() || latency_overlay.is_some();
        let key = format!("{:?}/{}", h.picked, shown);
        if key != self.overlay_key {
            if let Some(runs) = &latency_overlay {
                el("overlay-chart").set_inner_html(&latency_text::svg_compare(runs));
            } else if let Some(lines) = &overlay {
                el("overlay-chart").set_inner_html(&chart::overlay_svg(lines));
            }
            self.overlay_key = key;
        }
        show("overlay-chart", shown);
    }
}

fn history_row(e: &history::Entry, tz: i32, picked: bool) -> String {
    let r = history::row(e, tz);
    let id = escape(&r.id);
    // Sweeps open as a table, plan runs as their page; tests are overlaid with tests, latency
    // runs with latency runs.
    let is_plan = e.kind == ResultKind::Plan;
    let pick = if e.is_sweep() || is_plan {
        "<span class='no-pick'></span>".to_string()
    } else {
        format!(
            "<label class='pick'><input type='checkbox' data-pick='{id}' \
             aria-label='Overlay {} to {}, {}'{}></label>",
            escape(&r.what),
            escape(&r.peer),
            escape(&r.when),
            if picked { " checked" } else { "" }
        )
    };
    // A plan run opens as its page (/r/<id>); everything else on the Result screen.
    let (open, close) = if is_plan {
        (format!("<a class='open' href='/r/{id}'>"), "</a>")
    } else {
        (
            format!("<button type='button' class='open' data-open='{id}'>"),
            "</button>",
        )
    };
    let badge = e.verdict.map_or_else(String::new, |v| {
        format!("<span class='badge {}'>{}</span>", v.name(), v.word())
    });
    format!(
        "<li data-id='{id}' data-protocol='{}' data-kind='{}'>{pick}\
         {open}<span class='when'>{}</span>\
         <span class='rate'>{}</span><span class='peer'>{} · {}{}</span><span class='status'>{}{badge}</span>{}{}{close}</li>",
        escape(&e.protocol.word()),
        escape(&e.kind.word()),
        escape(&r.when),
        escape(&r.throughput),
        escape(&r.what),
        escape(&r.peer),
        if r.kept_by.is_empty() {
            String::new()
        } else {
            format!(" · {}", escape(&r.kept_by))
        },
        escape(&r.status),
        full_width_line("wifi-line", &r.wifi),
        full_width_line("notes-line", &r.notes),
    )
}

/// A history row's line under its figures (`class`), or nothing for empty `text`.
fn full_width_line(class: &str, text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("<span class='{class}'>{}</span>", escape(text))
    }
}

/// The share box: shown with a stored result; its switches only for the token holder.
fn render_share(model: &Model) {
    let share = model.shown_share();
    show("share", share.is_some());
    let Some(share) = share else { return };
    let origin = crate::dom::window().location().origin().unwrap_or_default();
    let url = history::share_url(&origin, &share.result_id);
    if value("share-url") != url {
        set_value("share-url", &url);
        set_text(
            "share-copy",
            if crate::dom::can_share() {
                "Share"
            } else {
                "Copy"
            },
        );
    }
    show("share-off", !share.link_enabled);
    show("share-admin", model.authorized);
    set_text(
        "share-toggle",
        if share.link_enabled {
            "Turn link off"
        } else {
            "Turn link on"
        },
    );
    set_text(
        "share-delete",
        if share.confirm_delete {
            "Tap again to delete"
        } else {
            "Delete"
        },
    );
}

/// Points the download link `#id` at a new blob of `text`, freeing the previous one.
fn set_download(slot: &mut Option<String>, id: &str, text: &str, mime: &str, name: &str) {
    if let Some(old) = slot.take() {
        let _ = Url::revoke_object_url(&old);
    }
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let url = Blob::new_with_str_sequence_and_options(&parts, &options)
        .and_then(|b| Url::create_object_url_with_blob(&b));
    let link = by_id::<HtmlAnchorElement>(id);
    if let Ok(url) = url {
        link.set_href(&url);
        link.set_download(name);
        *slot = Some(url);
    }
}

/// Adds the History screen's fields for the filters the peer applies (a tag, a time) and its
/// "More results" button: PC builds' UI only (a DUT's page has no lab store to filter), so
/// they are not in the shared index.html. Before the controls are wired.
#[cfg(feature = "lab-store")]
pub fn add_history_controls() {
    let _ = el("h-direction").insert_adjacent_html(
        "afterend",
        "<input id='h-tag' placeholder='tag' aria-label='Only results with this tag' \
         autocomplete='off' autocapitalize='off' spellcheck='false'>\
         <input id='h-since' placeholder='since: 24h, 7d, 2026-12-01' \
         aria-label='Only results since (24h, 7d, or a date)' autocomplete='off' spellcheck='false'>",
    );
    let _ = el("history-list").insert_adjacent_html(
        "afterend",
        "<button id='history-more' type='button' hidden>More results</button>",
    );
}

/// The history filters as typed (with the peer's: tag and since, in PC builds' UI).
pub fn read_filter() -> Filter {
    let filter = Filter::from_fields(value("h-peer"), &value("h-protocol"), &value("h-direction"));
    #[cfg(feature = "lab-store")]
    let filter = filter.with_asked(
        &value("h-tag"),
        &value("h-since"),
        js_sys::Date::now() as u64,
        js_sys::Date::new_0().get_timezone_offset() as i32,
    );
    filter
}

/// The page's title: the screen, and what runs or was shown.
fn page_title(model: &Model) -> String {
    let what = match model.screen {
        Screen::Connect => "Connect".to_string(),
        Screen::Peer => model
            .peer
            .as_ref()
            .map_or("Peer".into(), |p| format!("Peer {}", p.name)),
        Screen::NewTest => "New test".into(),
        Screen::Running => match &model.run {
            Some(run) => format!(
                "Running: {} → {}",
                present::describe_spec(&run.spec),
                run.target
            ),
            None => "Running".into(),
        },
        Screen::Result => match &model.shown {
            Some(Shown::Test(r)) => format!("Result: {}", present::headline(r)),
            Some(Shown::Sweep(_) | Shown::Latency(_)) | None => "Result".into(),
        },
        Screen::History => "History".into(),
        #[cfg(feature = "plans")]
        Screen::Plans => match &model.plans.run {
            Some(run) => format!("Plan {}", run.name),
            None => "Plans".into(),
        },
        #[cfg(not(feature = "plans"))]
        Screen::Plans => "Plans".into(),
    };
    format!("{what} · perfpeer")
}

/// The Peer screen's one-tap button: the last test again (or a first test to the peer tested
/// last), or back to the test that runs.
fn render_quick(model: &Model) {
    if let Some(run) = &model.run {
        set_text("quick-test", "Back to the running test");
        set_text(
            "quick-what",
            &format!("{} → {}", present::describe_spec(&run.spec), run.target),
        );
        show("quick", true);
        return;
    }
    let quick = model.quick_test().filter(|_| model.authorized);
    show("quick", quick.is_some());
    if let Some(input) = quick {
        set_text("quick-test", &format!("Test to {}", input.target));
        let what = match crate::form::to_latency(&input) {
            Some(_) => "Latency under load".to_string(),
            None => crate::form::to_request(&input)
                .map(|r| match &r.sweep {
                    Some(sizes) => present::describe_sweep(&r.spec, sizes),
                    None => present::describe_spec(&r.spec),
                })
                .unwrap_or_default(),
        };
        set_text("quick-what", &what);
    }
}

/// The Result screen's verdict card when the result was judged: the badge in words (its colour
/// by its class) and the checks that tell the outcome; hidden otherwise.
fn render_verdict(verdict: Option<&Verdict>) {
    show("verdict", verdict.is_some());
    let Some(verdict) = verdict else { return };
    let card = present::verdict_card(verdict);
    let _ = el("verdict").set_attribute("class", &format!("card verdict {}", card.tone));
    set_text("verdict-badge", card.badge);
    let lines: String = card
        .lines
        .iter()
        .map(|line| format!("<li>{}</li>", escape(line)))
        .collect();
    el("verdict-checks").set_inner_html(&lines);
}

/// The Peer screen's Start on a first open: the other peer's address, and why it was refused.
fn render_first_test(model: &Model) {
    show("first-test", model.offers_first_test());
    let error = model
        .form_error
        .as_ref()
        .filter(|_| model.screen == Screen::Peer);
    toggle_class("first-target", "invalid", error.is_some());
    set_text("first-error", error.map_or("", |e| e.message.as_str()));
    show("first-error", error.is_some());
}

fn render_link(model: &Model) {
    let text = match model.link {
        Link::Connecting => "Connecting to the peer…".to_string(),
        Link::Open => String::new(),
        Link::Lost { attempt } => format!(
            "Connection to the peer lost; reconnecting (attempt {attempt})…{}",
            if model.run.is_some() {
                " The test keeps running on the peer."
            } else {
                ""
            }
        ),
    };
    set_text("link-status", &text);
    show("link-status", !text.is_empty());
}

fn render_connect(model: &Model) {
    let name = model.peer.as_ref().map_or("…", |p| p.name.as_str());
    set_text("connect-peer", name);
    show("token-error", model.token_rejected);
    let status = match (model.link, model.authorized) {
        (Link::Open, true) if model.token.is_none() => {
            "Connected. This peer is open: this page can run tests without a token."
        }
        (Link::Open, true) => "Connected with the token: this page can run tests.",
        (Link::Open, false) if model.token.is_none() => {
            "Connected. Enter the token the peer printed at start to run tests."
        }
        (Link::Open, false) => "Connected, but without a valid token.",
        _ => "Not connected yet.",
    };
    set_text("connect-status", status);
}

/// Sets `#id`'s markup when it differs from what `slot` says was set last.
fn set_html_once(slot: &mut String, id: &str, html: String) {
    if *slot != html {
        el(id).set_inner_html(&html);
        *slot = html;
    }
}

fn render_peer(peer: &PeerInfo, model: &Model, drawn: &mut [String; 2]) {
    set_text("peer-name", &peer.name);
    set_text("peer-version", &format!("perfpeer {}", peer.version));
    set_text("peer-system", &peer.system);
    let list = |items: &[String]| -> String {
        items
            .iter()
            .map(|a| format!("<li>{}</li>", escape(a)))
            .collect()
    };
    set_html_once(&mut drawn[0], "peer-addresses", list(&peer.addresses));
    // The control port is the one this page came from.
    let control = crate::dom::page_port();
    set_text(
        "peer-ports",
        &format!(
            "{control} (web page and control, TCP) · {} (data, TCP and UDP)",
            peer.data_port
        ),
    );
    set_text("peer-cc", &peer.congestion_controls.join(", "));
    set_text("peer-dccp", &present::dccp_support(&peer.dccp));
    // A full disk or a read-only data directory: say so where the peer is described.
    // Results kept here that wait for the lab's database (`--store`) are said on the same row.
    #[cfg(feature = "lab-store")]
    let waiting = peer.lab_store.as_ref().map_or(0, |lab| lab.waiting);
    #[cfg(not(feature = "lab-store"))]
    let waiting = 0;
    let store_line = match &peer.store_problem {
        Some(problem) => problem.clone(),
        None if waiting > 0 => format!("{waiting} results waiting for the lab database"),
        None => String::new(),
    };
    set_text("peer-store", &store_line);
    show("peer-store-row", !store_line.is_empty());
    set_text(
        "dccp-hint",
        &format!("DCCP on this peer: {}", present::dccp_support(&peer.dccp)),
    );
    let bitrate = match peer.max_bitrate {
        0 => "no rate cap".to_string(),
        b => format!("at most {}", present::rate(b as f64)),
    };
    set_text(
        "peer-limits",
        &format!(
            "{} tests at once, {} s each, {bitrate}",
            peer.max_tests, peer.max_duration_s
        ),
    );
    // Tests this peer runs for a browser or the CLI can be followed: a tap attaches.
    let tests: String = model
        .tests
        .iter()
        .map(|t| {
            let what = format!(
                "{} with {}, {:.0} s so far",
                present::describe_spec_at(&t.spec, t.role),
                t.peer,
                t.elapsed_s
            );
            match &t.attach_id {
                Some(id) => format!(
                    "<li><button type='button' data-attach='{}'>{} — follow it</button></li>",
                    escape(id),
                    escape(&what)
                ),
                None => format!(
                    "<li>{} (this peer is the far end: its figures are at the other peer)</li>",
                    escape(&what)
                ),
            }
        })
        .collect();
    let tests = if tests.is_empty() {
        "<li>none</li>".to_string()
    } else {
        tests
    };
    set_html_once(&mut drawn[1], "peer-tests", tests);
}

fn render_form_error(model: &Model) {
    for f in [
        "target",
        "mode",
        "protocol",
        "ccid",
        "sizes",
        "cbr",
        "seconds",
        "bytes",
        "streams",
        "len",
        "bitrate",
        "tos",
        "window",
        "congestion",
        "trip-times",
        "video",
        "multicast",
        "expect",
    ] {
        let bad = model.form_error.as_ref().is_some_and(|e| e.field == f);
        toggle_class(&format!("f-{f}"), "invalid", bad);
    }
    if model.form_error.as_ref().is_some_and(|e| {
        matches!(
            e.field,
            "tos" | "window" | "congestion" | "trip-times" | "video" | "multicast" | "expect"
        )
    }) {
        let _ = el("more-settings").set_attribute("open", "");
    }
    match &model.form_error {
        Some(e) => {
            set_text("form-error", &e.message);
            show("form-error", true);
        }
        None => show("form-error", false),
    }
}

fn render_run(run: &RunState) {
    let (sweep, latency) = match &run.progress {
        Progress::Test => (None, None),
        Progress::Sweep(sweep) => (Some(sweep), None),
        Progress::Latency(latency) => (None, Some(latency)),
    };
    show("run-latency", latency.is_some());
    let labels = if latency.is_some() {
        ["Probe RTT now", "Load now", "Probes"]
    } else {
        ["Now", "Average", "Retransmits / loss"]
    };
    for (id, label) in [
        "live-current-label",
        "live-average-label",
        "live-extra-label",
    ]
    .iter()
    .zip(labels)
    {
        set_text(id, label);
    }
    if let Some(latency) = latency {
        render_run_latency_figures(run, latency);
        return;
    }
    let title = match sweep {
        Some(sweep) => {
            let now = sweep.running_size().map_or(String::new(), |len| {
                format!(
                    " · now {len} B ({} of {})",
                    sweep.points.len() + 1,
                    sweep.sizes.len()
                )
            });
            format!(
                "{} → {}{now}",
                present::describe_sweep(&run.spec, &sweep.sizes),
                run.target
            )
        }
        None => format!("{} → {}", present::describe_spec(&run.spec), run.target),
    };
    set_text("run-title", &title);
    // A sweep's time and bar count the whole sweep; a test's its own.
    let live = match sweep {
        Some(sweep) => crate::live::sweep_live(
            &run.spec,
            &run.client,
            &run.server,
            sweep.points.len(),
            sweep.sizes.len(),
        ),
        None => crate::live::live(&run.spec, &run.client, &run.server),
    };
    set_text("live-current", &live.current);
    set_text("live-average", &live.average);
    set_text("live-extra", &live.extra);
    set_text("live-elapsed", &live.elapsed);
    set_text("live-remaining", &live.remaining);
    render_live_links(live.link_here.as_deref(), live.link_far.as_deref());
    let _ = by_id::<HtmlElement>("progress-bar")
        .style()
        .set_property("width", &format!("{:.1}%", live.progress * 100.0));
    let x_max = match run.spec.end {
        EndCondition::Time { duration } => Some((duration + run.spec.omit).as_secs_f64()),
        EndCondition::Bytes { .. } => None,
    };
    // This page's peer is the client: TX is what it sends.
    let sending = Sending::seen_from(run.spec.direction, PeerRole::Client);
    let link = chart::wifi::Overlay::build(&run.client, &run.server, sending);
    el("run-chart").set_inner_html(&chart::svg_with_link(
        &chart::series(&run.client),
        &link,
        x_max,
    ));
    show("run-sweep", sweep.is_some());
    if let Some(sweep) = sweep {
        let mut rows = html::sweep_rows(&sweep.points);
        if let Some(len) = sweep.running_size() {
            rows.push_str(&format!(
                "<tr class='running'><td>{len} B</td><td colspan='3'>running…</td></tr>"
            ));
        }
        el("run-sweep-rows").set_inner_html(&rows);
    }
    // Datagram tests: the stream's lines as `perfpeer test --cbr` prints them, newest last.
    let datagrams = run.spec.protocol != Protocol::Tcp && sweep.is_none();
    show("run-lines", datagrams);
    if datagrams {
        set_lines("run-lines", &stream_lines(&run.client, &run.server));
    }
    set_text(
        "cancel",
        if run.cancelling {
            "Cancelling…"
        } else {
            "Cancel test"
        },
    );
}

/// A latency run's live figures: the phase running, the last round trip and the progress.
fn render_run_latency_figures(run: &RunState, latency: &LatencyRun) {
    let live = &latency.live;
    let phase = live.running.map_or("starting", |(p, _)| p.name());
    set_text(
        "run-title",
        &format!("Latency under load → {} · {phase}", run.target),
    );
    let last_rtt = live
        .probes
        .iter()
        .max_by_key(|p| p.seq)
        .and_then(|p| p.echo.map(|e| e.rtt_ns(p.sent_ns) as f64 / 1e6));
    set_text(
        "live-current",
        &last_rtt.map_or_else(
            || "–".into(),
            |ms| format!("{} ms", latency_text::ms_text(ms)),
        ),
    );
    let last_rate = live.throughput.last().map(|t| {
        let both = [t.down, t.up].iter().flatten().sum::<f64>();
        present::rate(both)
    });
    set_text("live-average", &last_rate.unwrap_or_else(|| "–".into()));
    let lost = live.probes.iter().filter(|p| p.echo.is_none()).count();
    set_text(
        "live-extra",
        &format!("{} settled, {lost} lost", live.probes.len()),
    );
    let elapsed = live
        .probes
        .iter()
        .map(|p| p.sent_ns as f64 / 1e9)
        .fold(0.0, f64::max);
    // The phases and the pauses between them (about half a second each).
    let total = latency.request.total_seconds() + 1.5;
    set_text("live-elapsed", &format!("{elapsed:.0} s"));
    set_text(
        "live-remaining",
        &format!("{:.0} s", (total - elapsed).max(0.0)),
    );
    let _ = by_id::<HtmlElement>("progress-bar").style().set_property(
        "width",
        &format!("{:.1}%", (elapsed / total).min(1.0) * 100.0),
    );
    show("run-sweep", false);
    show("run-lines", false);
    render_live_links(None, None);
    set_text(
        "cancel",
        if run.cancelling {
            "Cancelling…"
        } else {
            "Cancel test"
        },
    );
}

/// Each end's Wi-Fi link in its last interval, where a radio carries the test.
fn render_live_links(here: Option<&str>, far: Option<&str>) {
    for (id, link) in [("live-link-here", here), ("live-link-far", far)] {
        set_text(id, link.unwrap_or(""));
        show(&format!("{id}-row"), link.is_some());
    }
}

/// Lines kept on the Running screen's stream view.
const STREAM_LINES: usize = 12;

fn stream_lines(client: &[IntervalReport], server: &[IntervalReport]) -> String {
    let lines: Vec<String> = client.iter().chain(server).flat_map(cbr::lines).collect();
    let from = lines.len().saturating_sub(STREAM_LINES);
    let mut out = format!("{}\n", cbr::header());
    for line in &lines[from..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The form as typed.
pub fn read_form() -> FormInput {
    FormInput {
        target: value("f-target"),
        mode: Choice::from_value(&value("f-mode")),
        protocol: Choice::from_value(&value("f-protocol")),
        ccid: value("f-ccid"),
        sizes: value("f-sizes"),
        cbr: value("f-cbr"),
        direction: Choice::from_value(&value("f-direction")),
        end: Choice::from_value(&value("f-end")),
        seconds: value("f-seconds"),
        bytes: value("f-bytes"),
        streams: value("f-streams"),
        len: value("f-len"),
        bitrate: value("f-bitrate"),
        tos: value("f-tos"),
        window: value("f-window"),
        congestion: value("f-congestion"),
        interval: value("f-interval"),
        trip_times: value("f-trip-times"),
        video: value("f-video"),
        multicast: value("f-multicast"),
        expect: value("f-expect"),
    }
}

/// Puts the peer tested last in the form's target, if the field is empty.
pub fn prefill_target(recent: &[String]) {
    if let Some(first) = recent.first()
        && value("f-target").trim().is_empty()
    {
        set_value("f-target", first);
    }
}

/// Puts a form's values in the form: a preset's (with the target as typed there), or the
/// Peer screen's first test (with the other peer typed on that screen).
pub fn fill_form(input: &FormInput) {
    set_value("f-target", &input.target);
    set_value("f-mode", &input.mode.value());
    set_value("f-protocol", &input.protocol.value());
    set_value("f-ccid", &input.ccid);
    set_value("f-sizes", &input.sizes);
    set_value("f-cbr", &input.cbr);
    set_value("f-direction", &input.direction.value());
    set_value("f-end", &input.end.value());
    set_value("f-seconds", &input.seconds);
    set_value("f-bytes", &input.bytes);
    set_value("f-streams", &input.streams);
    set_value("f-len", &input.len);
    set_value("f-bitrate", &input.bitrate);
    set_value("f-tos", &input.tos);
    set_value("f-window", &input.window);
    set_value("f-congestion", &input.congestion);
    set_value("f-interval", &input.interval);
    set_value("f-trip-times", &input.trip_times);
    set_value("f-video", &input.video);
    set_value("f-multicast", &input.multicast);
    set_value("f-expect", &input.expect);
    sync_form();
}

/// Shows only the fields that apply: bytes or seconds for one test, sizes for a sweep, the
/// stream's rate for a constant-bitrate stream, the rate for datagrams, the CCID for DCCP.
pub fn sync_form() {
    let rows = FormRows::of(
        RunKind::from_value(&value("f-mode")),
        Protocol::from_value(&value("f-protocol")),
        EndsAfter::from_value(&value("f-end")),
    );
    show("row-latency", rows.latency);
    show("row-protocol", rows.protocol_and_len);
    show("row-len", rows.protocol_and_len);
    show("row-end", rows.end);
    show("row-seconds", rows.seconds);
    show("row-bytes", rows.bytes);
    show("row-sizes", rows.sizes);
    show("row-cbr", rows.cbr);
    show("row-dccp", rows.dccp);
    show("row-bitrate", rows.bitrate);
}
