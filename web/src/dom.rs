//! Small DOM wrappers (wasm32 only): element lookup with the one allowed `expect` (for markup we
//! ship in index.html), typed casts, and [`Listener`] / [`Timeout`] guards that unregister their
//! closures when dropped instead of leaking them with `forget()`.

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
    }
}

/// Adds or removes a CSS class on `#id`.
pub fn toggle_class(id: &str, class: &str, on: bool) {
    let _ = el(id).class_list().toggle_with_force(class, on);
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
