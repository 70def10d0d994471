//! Wires the page together (wasm32 only): every event becomes a [`Msg`] for [`Model::update`],
//! the returned [`Cmd`]s are carried out here (WebSocket, fetch, timers, localStorage), then the
//! [`View`] redraws. Messages that arrive while one is being handled wait in a queue, so a
//! re-entrant event never finds the model borrowed.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use perfpeer_shared::control::ServerMsg;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    Element, Event, EventTarget, Headers, HtmlInputElement, MessageEvent, RequestInit, Response,
    WebSocket,
};

use crate::dom::{self, Listener, Timeout};
use crate::form;
use crate::history::Request;
use crate::present;
use crate::route::Route;
use crate::store::{Cmd, Model, Msg, Screen};
use crate::view::{self, View};
use perfpeer_shared::format::layout::Layout;

const TOKEN_KEY: &str = "perfpeer-token";
/// localStorage key of the other peers tested from this page (a JSON list, newest first).
const RECENT_KEY: &str = "perfpeer-recent-peers";
/// localStorage key of the form that started the last run (JSON), for "Test to <peer>".
const LAST_TEST_KEY: &str = "perfpeer-last-test";

/// The running page.
pub struct App {
    model: Model,
    view: View,
    socket: Option<Socket>,
    reconnect: Option<Timeout>,
    delete_expiry: Option<Timeout>,
    /// The Peer screen's next `/api/info` (dropped, so cleared, when the screen closes).
    info_refresh: Option<Timeout>,
    ui: Vec<Listener>,
}

struct Socket {
    ws: WebSocket,
    _listeners: Vec<Listener>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        // Listeners go first (field order), so this close is not reported as a drop.
        let _ = self.ws.close();
    }
}

/// The app and its queue of messages not yet handled.
pub struct Shared {
    app: RefCell<App>,
    queue: RefCell<VecDeque<Msg>>,
}

/// Starts the page: wires the controls, reads the token, connects.
pub fn start() -> Rc<Shared> {
    let shared = Rc::new(Shared {
        app: RefCell::new(App {
            model: Model::default(),
            view: View::default(),
            socket: None,
            reconnect: None,
            delete_expiry: None,
            info_refresh: None,
            ui: Vec::new(),
        }),
        queue: RefCell::new(VecDeque::new()),
    });
    #[cfg(feature = "lab-store")]
    view::add_history_controls();
    let ui = wire_controls(&shared);
    if let Ok(mut app) = shared.app.try_borrow_mut() {
        app.ui = ui;
    }
    view::sync_form();
    let hash = dom::window().location().hash().unwrap_or_default();
    let fragment = present::token_from_fragment(&hash);
    let route = Route::parse(&hash);
    let stored = storage().and_then(|s| s.get_item(TOKEN_KEY).ok().flatten());
    let read = |key| storage().and_then(|s| s.get_item(key).ok().flatten());
    let peers: Vec<String> = read(RECENT_KEY)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let last = read(LAST_TEST_KEY).and_then(|text| serde_json::from_str(&text).ok());
    dispatch(&shared, Msg::Recall { peers, last });
    dispatch(
        &shared,
        Msg::Boot {
            fragment,
            stored,
            route,
        },
    );
    // The form starts at the peer tested last.
    if let Ok(app) = shared.app.try_borrow() {
        view::prefill_target(&app.model.recent_peers);
    }
    shared
}

/// Handles `msg` now, or after the message being handled.
pub fn dispatch(shared: &Rc<Shared>, msg: Msg) {
    shared.queue.borrow_mut().push_back(msg);
    let Ok(mut app) = shared.app.try_borrow_mut() else {
        return; // the handler that holds the borrow drains the queue
    };
    loop {
        let next = shared.queue.borrow_mut().pop_front();
        let Some(msg) = next else { break };
        // A place the user went gets its own history entry (Back returns from it), also when
        // it comes with a reply (a result opened from History); where the page moved by itself
        // (a run's result arriving, Back itself), the entry is replaced.
        let is_navigation = msg.is_navigation();
        let cmds = app.model.update(msg);
        let user_moved = is_navigation || cmds.contains(&Cmd::NewEntry);
        for cmd in cmds {
            app.run(cmd, shared);
        }
        sync_url(&app.model.route(), user_moved);
    }
    let App { model, view, .. } = &mut *app;
    view.render(model);
}

/// Writes the model's place into the URL's fragment (never the token: it is in storage).
fn sync_url(route: &Route, new_entry: bool) {
    let window = dom::window();
    let hash = route.hash();
    if window.location().hash().ok().as_deref() == Some(hash.as_str()) {
        return;
    }
    let Ok(history) = window.history() else {
        return;
    };
    let _ = if new_entry {
        history.push_state_with_url(&JsValue::NULL, "", Some(&hash))
    } else {
        history.replace_state_with_url(&JsValue::NULL, "", Some(&hash))
    };
}

impl App {
    fn run(&mut self, cmd: Cmd, shared: &Rc<Shared>) {
        match cmd {
            Cmd::Connect => {
                self.reconnect = None;
                self.socket = None;
                self.socket = open_socket(Rc::downgrade(shared));
                if self.socket.is_none() {
                    // Creating the socket failed outright: treat it as a drop and retry.
                    shared.queue.borrow_mut().push_back(Msg::SocketClosed);
                }
            }
            Cmd::ReconnectIn(ms) => {
                let weak = Rc::downgrade(shared);
                self.reconnect = Timeout::new(ms, move || send(&weak, Msg::ReconnectDue));
            }
            Cmd::Send(msg) => {
                if let Some(s) = &self.socket {
                    // A failed send is followed by the socket's close event.
                    let _ = s.ws.send_with_str(&msg.to_json());
                }
            }
            // Only a token the peer accepted: a refused one never replaces the one that works.
            Cmd::SaveToken(t) => {
                if let Some(s) = storage() {
                    let _ = s.set_item(TOKEN_KEY, &t);
                }
            }
            Cmd::SaveRecent(peers, input) => {
                if let Some(s) = storage() {
                    if let Ok(text) = serde_json::to_string(&peers) {
                        let _ = s.set_item(RECENT_KEY, &text);
                    }
                    if let Ok(text) = serde_json::to_string(&input) {
                        let _ = s.set_item(LAST_TEST_KEY, &text);
                    }
                }
            }
            Cmd::FillForm(input) => view::fill_form(&input),
            Cmd::ExpireDeleteIn(ms) => {
                let weak = Rc::downgrade(shared);
                self.delete_expiry = Timeout::new(ms, move || send(&weak, Msg::DeleteExpired));
            }
            Cmd::Fetch(request) => {
                fetch(Rc::downgrade(shared), request, self.model.token.as_deref())
            }
            Cmd::RefreshInfoIn(ms) => {
                let weak = Rc::downgrade(shared);
                self.info_refresh = Timeout::new(ms, move || send(&weak, Msg::InfoDue));
            }
            Cmd::StopInfoRefresh => self.info_refresh = None,
            // `dispatch` writes the URL once the update's commands are carried out.
            Cmd::NewEntry => {}
        }
    }
}

fn send(weak: &Weak<Shared>, msg: Msg) {
    if let Some(shared) = weak.upgrade() {
        dispatch(&shared, msg);
    }
}

/// Asks this peer's result API with the token; the answer comes back as [`Msg::Reply`].
fn fetch(weak: Weak<Shared>, request: Request, token: Option<&str>) {
    let init = RequestInit::new();
    init.set_method(request.method());
    if let Ok(headers) = Headers::new() {
        if let Some(t) = token {
            let _ = headers.set("authorization", &format!("Bearer {t}"));
        }
        if request.body().is_some() {
            let _ = headers.set("content-type", "application/json");
        }
        init.set_headers(&headers);
    }
    if let Some(body) = request.body() {
        init.set_body(&JsValue::from_str(&body));
    }
    let path = request.path();
    let on_response = Closure::once_into_js(move |value: JsValue| {
        let Ok(response) = value.clone().dyn_into::<Response>() else {
            return reply(&weak, request, 0, &value);
        };
        let status = response.status();
        match response.text() {
            Ok(text) => {
                let on_text = Closure::once_into_js(move |body: JsValue| {
                    reply(&weak, request, status, &body);
                });
                settle(&text, &on_text);
            }
            Err(e) => reply(&weak, request, 0, &e),
        }
    });
    settle(
        &dom::window().fetch_with_str_and_init(&path, &init),
        &on_response,
    );
}

/// `promise.then(f, f)`: `f` (from `Closure::once_into_js`) runs exactly once, fulfilled or
/// rejected, and is freed then, so nothing is kept or leaked per request.
fn settle(promise: &js_sys::Promise, f: &JsValue) {
    let then = js_sys::Reflect::get(promise, &JsValue::from_str("then"))
        .ok()
        .and_then(|t| t.dyn_into::<js_sys::Function>().ok());
    if let Some(then) = then {
        let _ = then.call2(promise, f, f);
    }
}

fn reply(weak: &Weak<Shared>, request: Request, status: u16, body: &JsValue) {
    let body = body.as_string().unwrap_or_else(|| {
        js_sys::JSON::stringify(body)
            .map(String::from)
            .unwrap_or_default()
    });
    send(
        weak,
        Msg::Reply {
            request,
            status,
            body,
        },
    );
}

/// Opens the share sheet with the share link where the browser has one; copies the link
/// otherwise (`dom::copy_text`, which also works on plain http).
fn share_link() {
    let input = dom::by_id::<HtmlInputElement>("share-url");
    if dom::share(&input.value(), &dom::document().title()) {
        return;
    }
    let copied = dom::copy_text(&input.value());
    if !copied {
        // Selected, for the user to copy by hand.
        input.select();
    }
    dom::set_text(
        "share-copy",
        if copied { "Copied" } else { "Select and copy" },
    );
}

/// Copies the result text shown (the tab in front) in one tap.
fn copy_shown_text() {
    let shown = Layout::ALL
        .into_iter()
        .map(|tab| dom::el(&format!("text-{}", tab.id())))
        .find(|e| !e.has_attribute("hidden"));
    let copied = shown
        .and_then(|e| e.text_content())
        .is_some_and(|text| dom::copy_text(&text));
    dom::set_text(
        "copy-text",
        if copied {
            "Copied"
        } else {
            "Select the text to copy it"
        },
    );
}

/// A tap in the Peer screen's running tests: the test to follow.
fn running_test_click(e: &Event) -> Option<Msg> {
    let target = e.target()?.dyn_into::<Element>().ok()?;
    let row = target.closest("[data-attach]").ok().flatten()?;
    Some(Msg::AttachTo(row.get_attribute("data-attach")?))
}

/// A tap in the Plans screen's list: the plan to run.
#[cfg(feature = "plans")]
fn plan_click(e: &Event) -> Option<Msg> {
    let target = e.target()?.dyn_into::<Element>().ok()?;
    let button = target.closest("[data-plan]").ok().flatten()?;
    Some(Msg::RunPlan {
        name: button.get_attribute("data-plan")?,
        tags: dom::value("plan-tags"),
    })
}

/// A tap in the history list: a tick box, or a row to open.
fn history_click(e: &Event) -> Option<Msg> {
    let target = e.target()?.dyn_into::<Element>().ok()?;
    if let Some(pick) = target.closest("[data-pick]").ok().flatten() {
        return Some(Msg::Pick(pick.get_attribute("data-pick")?));
    }
    let row = target.closest("[data-open]").ok().flatten()?;
    Some(Msg::Open(row.get_attribute("data-open")?))
}

fn storage() -> Option<web_sys::Storage> {
    dom::window().local_storage().ok().flatten()
}

/// `ws://` or `wss://` and this page's host, path `/ws`.
fn socket_url() -> String {
    let loc = dom::window().location();
    let scheme = match loc.protocol().as_deref() {
        Ok("https:") => "wss",
        _ => "ws",
    };
    format!("{scheme}://{}/ws", loc.host().unwrap_or_default())
}

fn open_socket(weak: Weak<Shared>) -> Option<Socket> {
    let ws = WebSocket::new(&socket_url()).ok()?;
    let target: &EventTarget = ws.as_ref();
    let on = |event, f: fn(&Event) -> Option<Msg>| {
        let weak = weak.clone();
        Listener::new(target, event, move |e| {
            if let Some(msg) = f(&e) {
                send(&weak, msg);
            }
        })
    };
    let listeners = vec![
        on("open", |_| Some(Msg::SocketOpen)),
        on("close", |_| Some(Msg::SocketClosed)),
        on("message", |e| {
            let text = e.dyn_ref::<MessageEvent>()?.data().as_string()?;
            Some(match ServerMsg::parse(&text) {
                Ok(m) => Msg::Server(m),
                Err(err) => Msg::BadFrame(err.to_string()),
            })
        }),
    ];
    Some(Socket {
        ws,
        _listeners: listeners,
    })
}

/// Listens on the page's own controls; the guards live as long as the app.
fn wire_controls(shared: &Rc<Shared>) -> Vec<Listener> {
    let mut out = Vec::new();
    let mut on = |id: &str, event: &'static str, make: Box<dyn Fn() -> Option<Msg>>| {
        let weak = Rc::downgrade(shared);
        out.push(Listener::new(
            dom::el(id).as_ref(),
            event,
            move |e: Event| {
                if event == "submit" {
                    e.prevent_default();
                }
                if let Some(msg) = make() {
                    send(&weak, msg);
                }
            },
        ));
    };
    for (id, screen) in [
        ("nav-connect", Screen::Connect),
        ("nav-peer", Screen::Peer),
        ("nav-new", Screen::NewTest),
        ("nav-run", Screen::Running),
        ("nav-result", Screen::Result),
        ("nav-history", Screen::History),
        ("open-history", Screen::History),
        ("refresh-history", Screen::History),
        ("nav-plans", Screen::Plans),
        ("open-plans", Screen::Plans),
        ("plan-list-again", Screen::Plans),
    ] {
        on(id, "click", Box::new(move || Some(Msg::Show(screen))));
    }
    on(
        "token-form",
        "submit",
        Box::new(|| Some(Msg::SubmitToken(dom::value("token-input")))),
    );
    on(
        "test-form",
        "submit",
        Box::new(|| Some(Msg::Start(view::read_form()))),
    );
    on(
        "first-test",
        "submit",
        Box::new(|| {
            Some(Msg::FirstTest {
                target: dom::value("first-target"),
                here: dom::page_address(),
            })
        }),
    );
    on("cancel", "click", Box::new(|| Some(Msg::Cancel)));
    #[cfg(feature = "plans")]
    on("plan-stop", "click", Box::new(|| Some(Msg::StopPlan)));
    on("run-again", "click", Box::new(|| Some(Msg::RunAgain)));
    on("refresh-tests", "click", Box::new(|| Some(Msg::Refresh)));
    for tab in Layout::ALL {
        on(
            &format!("tab-{}", tab.id()),
            "click",
            Box::new(move || Some(Msg::SelectTab(tab))),
        );
    }
    on("dismiss", "click", Box::new(|| Some(Msg::Dismiss)));
    on("compare", "click", Box::new(|| Some(Msg::Compare)));
    on("share-toggle", "click", Box::new(|| Some(Msg::ToggleLink)));
    on("share-delete", "click", Box::new(|| Some(Msg::Delete)));
    on(
        "share-copy",
        "click",
        Box::new(|| {
            share_link();
            None
        }),
    );
    on(
        "copy-text",
        "click",
        Box::new(|| {
            copy_shown_text();
            None
        }),
    );
    on("quick-test", "click", Box::new(|| Some(Msg::QuickTest)));
    on(
        "notes-save",
        "click",
        Box::new(|| {
            Some(Msg::SaveNotes {
                text: dom::value("notes-text"),
                tags: dom::value("notes-tags"),
            })
        }),
    );
    for (id, event) in [
        ("h-peer", "input"),
        ("h-protocol", "change"),
        ("h-direction", "change"),
    ] {
        on(
            id,
            event,
            Box::new(|| Some(Msg::SetFilter(view::read_filter()))),
        );
    }
    // The filters the peer applies: asked again when a field is left or Enter is pressed.
    #[cfg(feature = "lab-store")]
    {
        for id in ["h-peer", "h-tag", "h-since"] {
            on(
                id,
                "change",
                Box::new(|| Some(Msg::FilterHistory(view::read_filter()))),
            );
        }
        on("history-more", "click", Box::new(|| Some(Msg::MoreHistory)));
    }
    for id in ["f-mode", "f-protocol", "f-end"] {
        on(
            id,
            "change",
            Box::new(|| {
                view::sync_form();
                None
            }),
        );
    }
    for preset in form::presets() {
        let id = preset.id;
        on(
            &format!("preset-{id}"),
            "click",
            Box::new(move || {
                Some(Msg::Preset {
                    id: id.to_string(),
                    target: dom::value("f-target"),
                })
            }),
        );
    }
    // Taps inside lists the view fills: one listener per list, the row read from the event.
    let mut lists: Vec<(&str, fn(&Event) -> Option<Msg>)> = vec![
        ("history-list", history_click),
        ("peer-tests", running_test_click),
    ];
    #[cfg(feature = "plans")]
    lists.push(("plans-list", plan_click));
    for (id, read) in lists {
        let weak = Rc::downgrade(shared);
        out.push(Listener::new(dom::el(id).as_ref(), "click", move |e| {
            if let Some(msg) = read(&e) {
                send(&weak, msg);
            }
        }));
    }
    // Back and Forward: go where the URL now points.
    let weak = Rc::downgrade(shared);
    out.push(Listener::new(
        dom::window().as_ref(),
        "popstate",
        move |_| {
            let hash = dom::window().location().hash().unwrap_or_default();
            if let Some(token) = present::token_from_fragment(&hash) {
                // The printed link opened over this page: use its token.
                send(&weak, Msg::SubmitToken(token));
            } else if let Some(route) = Route::parse(&hash) {
                send(&weak, Msg::Navigate(route));
            }
        },
    ));
    // Back online after a blip: reconnect now rather than at the next backoff step.
    let weak = Rc::downgrade(shared);
    out.push(Listener::new(dom::window().as_ref(), "online", move |_| {
        send(&weak, Msg::ReconnectDue)
    }));
    out
}
