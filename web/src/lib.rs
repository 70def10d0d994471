//! perfpeer-web: the browser front-end a peer serves at `/`. Rust compiled to wasm32 with
//! wasm-bindgen and web-sys; every message and every rendering comes from `perfpeer-shared`, so
//! the page prints exactly what the CLI prints.
//!
//! # Layout
//! DOM-free (built and unit-tested on the host too):
//! - [`store`]: the model, its `Msg`s and `Cmd`s, and the one `update` function.
//! - [`form`]: the new-test form's values → a validated `run` request; the presets.
//! - [`live`]: the running screen's numbers from the intervals so far.
//! - [`present`]: figures and words the result and error screens show (summary card, texts).
//! - [`history`]: the history list (filters, rows), the result API's requests and answers, the
//!   share link and the comparison chart's lines.
//! - [`route`]: the place in the page as the URL fragment says it (`#/run/<id>`, …), so a reload
//!   comes back to it and Back steps through the screens.
//!
//! Browser only (wasm32): `dom` (element wrappers, listener and timer guards), `view` (model →
//! page; `plans_view` the Plans screen), `controller` (events → messages → commands), and the `start` entry point.

pub mod form;
pub mod history;
pub mod live;
pub mod present;
pub mod route;
pub mod store;

#[cfg(target_arch = "wasm32")]
mod controller;
#[cfg(target_arch = "wasm32")]
mod dom;
#[cfg(target_arch = "wasm32")]
#[cfg(feature = "plans")]
mod plans_view;
#[cfg(target_arch = "wasm32")]
mod view;

#[cfg(target_arch = "wasm32")]
mod entry {
    use std::cell::RefCell;
    use std::rc::Rc;

    use wasm_bindgen::prelude::wasm_bindgen;

    thread_local! {
        /// The app lives as long as the page.
        static APP: RefCell<Option<Rc<crate::controller::Shared>>> = const { RefCell::new(None) };
    }

    /// Called by the JS shell once the module is loaded.
    #[wasm_bindgen(start)]
    pub fn start() {
        let app = crate::controller::start();
        APP.with(|a| *a.borrow_mut() = Some(app));
    }
}
