//! Small DOM wrappers (wasm32 only): element lookup with the one allowed `expect` (for markup we
//! ship in index.html), typed casts, text panes filled line by line, the page's own address, and
//! [`Listener`] / [`Timeout`] guards that unregister their closures when dropped instead of
//! leaking them with `forget()`.

use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Document, Element, Event, EventTarget, HtmlElement, HtmlInputElement, Window};

/// The window (always present on a page).
pub fn window() -> Window {
    web_sys::window().expect("should run in a browser window")
}

/// The document (always present on a page).
pub fn document() -> Document {
    window().document().expect("should have a document")
}

/// An element of our own markup by id, cast to `T`.
pub fn by_id<T: JsCast>(id: &str) -> T {
    document()
        .get_element_by_id(id)
        .unwrap_or_else(|| panic!("should have #{id} on the page"))
        .dyn_into::<T>()
        .unwrap_or_else(|_| panic!("should have #{id} of the right element type"))
}

/// An element of our markup by id.
pub fn el(id: &str) -> Element {
    by_id::<Element>(id)
}

/// Sets the text of `#id`.
pub fn set_text(id: &str, text: &str) {
    el(id).set_text_content(Some(text));
}

/// Sets the text of the text pane `#id` one line per `span.line`, so a line too long for the
/// pane wraps under a hanging indent (CSS) instead of scrolling sideways. The text (copied,
/// read by `textContent`) is `text` unchanged: each span keeps its line's newline.
pub fn set_lines(id: &str, text: &str) {
    let pane = el(id);
    pane.set_text_content(None);
    let document = document();
    for line in text.split_inclusive('\n') {
        if let Ok(span) = document.create_element("span") {
            span.set_class_name("line");
            span.set_text_content(Some(line));
            let _ = pane.append_child(&span);
        }
    }
}

/// The port this page came from (the peer's control port), named even when it is the
/// scheme's default.
pub fn page_port() -> String {
    let location = window().location();
    location
        .port()
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| {
            if location.protocol().as_deref() == Ok("https:") {
                "443".into()
            } else {
                "80".into()
            }
        })
}

/// This peer's control address as this page reached it: `host:port` (`[v6]:port`).
pub fn page_address() -> String {
    let host = window().location().hostname().unwrap_or_default();
    format!("{host}:{}", page_port())
}

/// Shows or hides `#id` (the `hidden` attribute).
pub fn show(id: &str, visible: bool) {
    by_id::<HtmlElement>(id).set_hidden(!visible);
}

/// Value of the input or select `#id`.
pub fn value(id: &str) -> String {
    match document().get_element_by_id(id) {
        Some(e) => match e.dyn_ref::<HtmlInputElement>() {
            Some(i) => i.value(),
            None => e
                .dyn_ref::<web_sys::HtmlSelectElement>()
                .map(|s| s.value())
                .or_else(|| {
                    e.dyn_ref::<web_sys::HtmlTextAreaElement>()
                        .map(|t| t.value())
                })
                .unwrap_or_default(),
        },
        None => String::new(),
    }
}

/// Sets the value of the input or select `#id`.
pub fn set_value(id: &str, v: &str) {
    let e = el(id);
    if let Some(i) = e.dyn_ref::<HtmlInputElement>() {
        i.set_value(v);
    } else if let Some(s) = e.dyn_ref::<web_sys::HtmlSelectElement>() {
        s.set_value(v);
    } else if let Some(t) = e.dyn_ref::<web_sys::HtmlTextAreaElement>() {
        t.set_value(v);
    }
}

/// Adds or removes a CSS class on `#id`.
pub fn toggle_class(id: &str, class: &str, on: bool) {
    let _ = el(id).class_list().toggle_with_force(class, on);
}

/// `window.navigator`, read as a plain object (only its `share` is used).
fn navigator() -> wasm_bindgen::JsValue {
    js_sys::Reflect::get(&window(), &"navigator".into()).unwrap_or_default()
}

/// Whether the browser has a share sheet (`navigator.share`: phones, some desktops).
pub fn can_share() -> bool {
    js_sys::Reflect::get(&navigator(), &"share".into()).is_ok_and(|f| f.is_function())
}

/// Opens the share sheet for `url`; `false` when there is none.
pub fn share(url: &str, title: &str) -> bool {
    let navigator = navigator();
    let Ok(f) = js_sys::Reflect::get(&navigator, &"share".into())
        .and_then(|f| f.dyn_into::<js_sys::Function>().map_err(Into::into))
    else {
        return false;
    };
    let data = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&data, &"url".into(), &url.into());
    let _ = js_sys::Reflect::set(&data, &"title".into(), &title.into());
    // A cancelled sheet rejects its promise: that is the user's choice, nothing to report.
    match f.call1(&navigator, &data) {
        Ok(p) => {
            // `then(f, f)`: `f` runs once either way and is freed then.
            let done = Closure::once_into_js(|_: wasm_bindgen::JsValue| {});
            if let Ok(then) = js_sys::Reflect::get(&p, &"then".into())
                .and_then(|t| t.dyn_into::<js_sys::Function>().map_err(Into::into))
            {
                let _ = then.call2(&p, &done, &done);
            }
            true
        }
        Err(_) => false,
    }
}

/// Copies `text` to the clipboard through a selected off-screen text area (`execCommand`,
/// which also works on plain http, where `navigator.clipboard` does not exist).
pub fn copy_text(text: &str) -> bool {
    let doc = document();
    let Ok(area) = doc
        .create_element("textarea")
        .map(|e| e.unchecked_into::<web_sys::HtmlTextAreaElement>())
    else {
        return false;
    };
    area.set_value(text);
    let _ = area.set_attribute("readonly", "");
    let _ = area.set_attribute("style", "position:fixed;top:0;left:-9999px;");
    let Some(body) = doc.body() else { return false };
    if body.append_child(&area).is_err() {
        return false;
    }
    area.select();
    let copied = doc
        .dyn_ref::<web_sys::HtmlDocument>()
        .and_then(|d| d.exec_command("copy").ok())
        .unwrap_or(false);
    area.remove();
    copied
}

/// An event listener that is removed when dropped.
pub struct Listener {
    target: EventTarget,
    event: &'static str,
    closure: Closure<dyn FnMut(Event)>,
}

impl Listener {
    /// Listens for `event` on `target`.
    pub fn new(
        target: &EventTarget,
        event: &'static str,
        handler: impl FnMut(Event) + 'static,
    ) -> Listener {
        let closure = Closure::<dyn FnMut(Event)>::new(handler);
        // Adding a listener to a live element does not fail; if it ever did, the page would
        // simply not react, and dropping the guard is still safe.
        let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
        Listener {
            target: target.clone(),
            event,
            closure,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.event, self.closure.as_ref().unchecked_ref());
    }
}

/// A `setTimeout` that is cleared when dropped.
pub struct Timeout {
    id: i32,
    _closure: Closure<dyn FnMut()>,
}

impl Timeout {
    /// Calls `f` once after `ms` milliseconds.
    pub fn new(ms: u32, f: impl FnMut() + 'static) -> Option<Timeout> {
        let closure = Closure::<dyn FnMut()>::new(f);
        let id = window()
            .set_timeout_with_callback_and_timeout_and_arguments_0(
                closure.as_ref().unchecked_ref(),
                i32::try_from(ms).unwrap_or(i32::MAX),
            )
            .ok()?;
        Some(Timeout {
            id,
            _closure: closure,
        })
    }
}

impl Drop for Timeout {
    fn drop(&mut self) {
        window().clear_timeout_with_handle(self.id);
    }
}
