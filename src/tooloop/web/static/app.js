// tooloop web: the little the pages need besides HTML. A session page follows its session live:
// the server sends an event when the stored session changes, and the page fetches its new
// server-rendered (escaped) part. No framework, nothing fetched from elsewhere.
"use strict";

(function () {
  const live = document.getElementById("live");
  if (!live || !window.EventSource) {
    return;
  }
  let version = live.dataset.version;
  let busy = false;
  let again = false;

  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const opened = new Set(
        Array.from(live.querySelectorAll("details[open][data-key]"), (d) => d.dataset.key)
      );
      const response = await fetch(live.dataset.liveFragment, { credentials: "same-origin" });
      if (response.ok) {
        live.innerHTML = await response.text();
        live.querySelectorAll("details[data-key]").forEach((d) => {
          if (opened.has(d.dataset.key)) d.open = true;
        });
        live.dataset.version = version;
      }
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }

  const events = new EventSource(live.dataset.liveEvents);
  events.addEventListener("changed", (event) => {
    if (event.data !== version) {
      version = event.data;
      refresh();
    }
  });
  document.body.classList.add("following");
})();
