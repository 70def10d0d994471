// Starts perfpeer's page: loads the wasm module beside this file, or says plainly why this
// browser cannot. A file of its own (not an inline script) so the page's content security
// policy can refuse every inline script.
import init from "./perfpeer_web.js";

init().catch((e) => {
  const box = document.getElementById("boot-error");
  box.textContent = "This browser could not start the perfpeer page (" + e + "). Use a current Chrome, Firefox or Safari.";
  box.hidden = false;
});
