//! Draws a [`Model`] into the page's markup (wasm32 only): shows the front screen, fills texts,
//! lists and the chart. It reads the model and never changes it; the heavy result rendering is
//! redone only when a different result arrives.

use perfpeer_shared::control::PeerInfo;
use perfpeer_shared::spec::EndCondition;
use wasm_bindgen::JsValue;
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, HtmlElement, Url};

use crate::chart;
use crate::dom::{by_id, el, set_text, set_value, show, toggle_class, value};
use crate::form::FormInput;
use crate::present::{self, escape};
use crate::store::{Link, Model, RunState, Screen, Tab};

/// What the view keeps between renders.
#[derive(Default)]
pub struct View {
    shown_result: Option<String>,
    json_url: Option<String>,
}

const SCREENS: [(Screen, &str, &str); 5] = [
    (Screen::Connect, "screen-connect", "nav-connect"),
    (Screen::Peer, "screen-peer", "nav-peer"),
    (Screen::NewTest, "screen-new", "nav-new"),
    (Screen::Running, "screen-run", "nav-run"),
    (Screen::Result, "screen-result", "nav-result"),
];

impl View {
    /// Brings the page up to date with `model`.
    pub fn render(&mut self, model: &Model) {
        for (screen, section, nav) in SCREENS {
            show(section, model.screen == screen);
            toggle_class(nav, "active", model.screen == screen);
        }
        show("nav-run", model.run.is_some());
        show("nav-result", model.result.is_some());
        render_link(model);
        render_connect(model);
        if let Some(peer) = &model.peer {
            render_peer(peer, model);
        }
        render_form_error(model);
        if let Some(run) = &model.run {
            render_run(run);
        }
        self.render_result(model);
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

    fn render_result(&mut self, model: &Model) {
        let Some(result) = &model.result else { return };
        for tab in Tab::ALL {
            toggle_class(&format!("tab-{}", tab.id()), "active", model.tab == tab);
            show(&format!("text-{}", tab.id()), model.tab == tab);
        }
        if self.shown_result.as_deref() == Some(result.id.as_str()) {
            return;
        }
        self.shown_result = Some(result.id.clone());
        set_text(
            "result-title",
            &format!(
                "{} → {}",
                present::describe_spec(&result.spec),
                result.server_addr
            ),
        );
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
        let x_max = result.spec.total_time().map(|d| d.as_secs_f64());
        el("result-chart")
            .set_inner_html(&chart::svg(&chart::series(&result.local.intervals), x_max));
        for tab in Tab::ALL {
            set_text(
                &format!("text-{}", tab.id()),
                &present::tab_text(tab, result),
            );
        }
        self.set_download(&present::json_text(result), &result.id);
    }

    fn set_download(&mut self, json: &str, id: &str) {
        if let Some(old) = self.json_url.take() {
            let _ = Url::revoke_object_url(&old);
        }
        let parts = js_sys::Array::of1(&JsValue::from_str(json));
        let options = BlobPropertyBag::new();
        options.set_type("application/json");
        let url = Blob::new_with_str_sequence_and_options(&parts, &options)
            .and_then(|b| Url::create_object_url_with_blob(&b));
        let link = by_id::<HtmlAnchorElement>("json-download");
        if let Ok(url) = url {
            link.set_href(&url);
            link.set_download(&format!("perfpeer-{id}.json"));
            self.json_url = Some(url);
        }
    }
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
        (Link::Open, true) => "Connected with the token: this page can run tests.",
        (Link::Open, false) if model.token.is_none() => {
            "Connected. Enter the token the peer printed at start to run tests."
        }
        (Link::Open, false) => "Connected, but without a valid token.",
        _ => "Not connected yet.",
    };
    set_text("connect-status", status);
}

fn render_peer(peer: &PeerInfo, model: &Model) {
    set_text("peer-name", &peer.name);
    set_text("peer-version", &format!("perfpeer {}", peer.version));
    set_text("peer-system", &peer.system);
    let list = |items: &[String]| -> String {
        items
            .iter()
            .map(|a| format!("<li>{}</li>", escape(a)))
            .collect()
    };
    el("peer-addresses").set_inner_html(&list(&peer.addresses));
    set_text("peer-ports", &format!("data port {}", peer.data_port));
    set_text("peer-cc", &peer.congestion_controls.join(", "));
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
    let tests: String = model
        .tests
        .iter()
        .map(|t| {
            format!(
                "<li>{} ({:?}) with {}: {}, {:.0} s</li>",
                escape(&t.test_id),
                t.role,
                escape(&t.peer),
                escape(&present::describe_spec(&t.spec)),
                t.elapsed_s
            )
        })
        .collect();
    if tests.is_empty() {
        el("peer-tests").set_inner_html("<li>none</li>");
    } else {
        el("peer-tests").set_inner_html(&tests);
    }
}

fn render_form_error(model: &Model) {
    for f in ["target", "seconds", "bytes", "streams", "len", "bitrate"] {
        let bad = model.form_error.as_ref().is_some_and(|e| e.field == f);
        toggle_class(&format!("f-{f}"), "invalid", bad);
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
    set_text(
        "run-title",
        &format!("{} → {}", present::describe_spec(&run.spec), run.target),
    );
    let live = crate::live::live(&run.spec, &run.client, &run.server);
    set_text("live-current", &live.current);
    set_text("live-average", &live.average);
    set_text("live-extra", &live.extra);
    set_text("live-elapsed", &live.elapsed);
    set_text("live-remaining", &live.remaining);
    let _ = by_id::<HtmlElement>("progress-bar")
        .style()
        .set_property("width", &format!("{:.1}%", live.progress * 100.0));
    let x_max = match run.spec.end {
        EndCondition::Time { duration } => Some((duration + run.spec.omit).as_secs_f64()),
        EndCondition::Bytes { .. } => None,
    };
    el("run-chart").set_inner_html(&chart::svg(&chart::series(&run.client), x_max));
    set_text(
        "cancel",
        if run.cancelling {
            "Cancelling…"
        } else {
            "Cancel test"
        },
    );
}

/// The form as typed.
pub fn read_form() -> FormInput {
    FormInput {
        target: value("f-target"),
        protocol: value("f-protocol"),
        direction: value("f-direction"),
        end: value("f-end"),
        seconds: value("f-seconds"),
        bytes: value("f-bytes"),
        streams: value("f-streams"),
        len: value("f-len"),
        bitrate: value("f-bitrate"),
    }
}

/// Puts a preset's values in the form, keeping the target.
pub fn fill_form(input: &FormInput) {
    set_value("f-protocol", &input.protocol);
    set_value("f-direction", &input.direction);
    set_value("f-end", &input.end);
    set_value("f-seconds", &input.seconds);
    set_value("f-bytes", &input.bytes);
    set_value("f-streams", &input.streams);
    set_value("f-len", &input.len);
    set_value("f-bitrate", &input.bitrate);
    sync_form();
}

/// Shows only the fields that apply: bytes or seconds, the rate for UDP.
pub fn sync_form() {
    let bytes = value("f-end") == "bytes";
    show("row-seconds", !bytes);
    show("row-bytes", bytes);
    show("row-bitrate", value("f-protocol") == "udp");
}
