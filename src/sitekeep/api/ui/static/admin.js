// sitekeep admin UI: tabs, folding rows, confirm dialogs, and panes that repaint only
// for their own revision. Loaded with htmx (static/htmx.min.js); no inline script, so the
// Content-Security-Policy allows scripts from this origin only.
(function () {
  "use strict";

  const POLL_MS = 2000;

  function panels() {
    return Array.from(document.querySelectorAll("[data-pane]"));
  }

  function paneOf(name) {
    return document.querySelector('[data-pane="' + name + '"]');
  }

  // -- tabs (WAI-ARIA tabs pattern) --------------------------------------------------

  function selectTab(tab) {
    const list = tab.closest('[role="tablist"]');
    list.querySelectorAll('[role="tab"]').forEach(function (other) {
      const selected = other === tab;
      other.setAttribute("aria-selected", selected ? "true" : "false");
      other.tabIndex = selected ? 0 : -1;
      const panel = document.getElementById(other.getAttribute("aria-controls"));
      if (panel) panel.hidden = !selected;
    });
    const url = new URL(location.href);
    url.searchParams.set("tab", tab.dataset.tab);
    history.replaceState(null, "", url);
  }

  document.addEventListener("click", function (event) {
    const tab = event.target.closest('[role="tab"]');
    if (tab) selectTab(tab);
  });

  document.addEventListener("keydown", function (event) {
    const tab = event.target.closest('[role="tab"]');
    if (!tab || (event.key !== "ArrowRight" && event.key !== "ArrowLeft")) return;
    const tabs = Array.from(tab.closest('[role="tablist"]').querySelectorAll('[role="tab"]'));
    const step = event.key === "ArrowRight" ? 1 : -1;
    const next = tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length];
    selectTab(next);
    next.focus();
    event.preventDefault();
  });

  // -- folding rows (disclosure buttons) ----------------------------------------------

  function setOpen(fold, open) {
    fold.setAttribute("aria-expanded", open ? "true" : "false");
    const body = document.getElementById(fold.getAttribute("aria-controls"));
    if (!body) return;
    body.hidden = !open;
    if (open && fold.dataset.detail && !body.dataset.loaded) {
      body.dataset.loaded = "1";
      htmx.ajax("GET", fold.dataset.detail, { target: body, swap: "innerHTML" });
    }
  }

  document.addEventListener("click", function (event) {
    const fold = event.target.closest(".fold");
    if (fold) setOpen(fold, fold.getAttribute("aria-expanded") !== "true");
  });

  function openHosts(panel) {
    return Array.from(panel.querySelectorAll('.fold[aria-expanded="true"]')).map(function (f) {
      return f.closest("[data-row]").dataset.row;
    });
  }

  // Every pane request (a repaint, Forget, Clear) says which rows the reader has open,
  // and whether the pane still owes its first unfolding of the top row.
  document.addEventListener("htmx:configRequest", function (event) {
    const panel = event.detail.target && event.detail.target.closest("[data-pane]");
    if (!panel || event.detail.target !== panel) return;
    event.detail.parameters["open"] = openHosts(panel).join(",");
    if (!panel.dataset.unfolded) event.detail.parameters["first"] = "1";
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    const panel = event.detail.target;
    if (!panel.matches || !panel.matches("[data-pane]")) return;
    const pane = panel.querySelector(".pane");
    if (pane && pane.dataset.openedTop) panel.dataset.unfolded = "1";
    const count = document.querySelector('[data-count-for="' + panel.dataset.pane + '"]');
    if (count && pane) count.textContent = pane.dataset.count;
    if (panel.dataset.pane === "site-data") followSiteData();
  });

  // History's pills show the snapshot's counts: after Site data repaints they follow it
  // without repainting History (its rows and folds stay as the reader left them).
  function followSiteData() {
    const history = paneOf("history");
    const site = paneOf("site-data");
    if (!history || !site) return;
    history.querySelectorAll("[data-open-site]").forEach(function (pill) {
      const row = site.querySelector('[data-row="' + CSS.escape(pill.dataset.openSite) + '"]');
      if (row) pill.textContent = row.dataset.pill;
      pill.hidden = !row;
    });
  }

  // A pill opens its host in Site data.
  document.addEventListener("click", function (event) {
    const pill = event.target.closest("[data-open-site]");
    if (!pill) return;
    event.preventDefault();
    const tab = document.querySelector('[role="tab"][data-tab="site-data"]');
    if (tab) selectTab(tab);
    const site = paneOf("site-data");
    const row = site && site.querySelector('[data-row="' + CSS.escape(pill.dataset.openSite) + '"]');
    if (!row) return;
    const fold = row.querySelector(".fold");
    setOpen(fold, true);
    row.scrollIntoView({ block: "nearest" });
    fold.focus();
  });

  // -- confirm dialogs ------------------------------------------------------------------

  document.addEventListener("click", function (event) {
    const opener = event.target.closest("[data-dialog]");
    if (opener) {
      const dialog = document.getElementById(opener.dataset.dialog);
      if (dialog) dialog.showModal();
      return;
    }
    const closer = event.target.closest("[data-close]");
    if (closer) closer.closest("dialog").close();
  });

  // -- revisions: repaint a pane only when its own revision moved -----------------------

  let polling = false;
  let polls = 0;

  async function poll() {
    const page = document.querySelector("[data-row-url]");
    if (!page || polling || document.hidden) return;
    polling = true;
    try {
      const reply = await fetch(page.dataset.rowUrl, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (reply.status === 401) {
        location.assign("/admin/sign-in");
        return;
      }
      if (!reply.ok) return;
      const revs = (await reply.json()).revs;
      for (const panel of panels()) {
        const pane = panel.querySelector(".pane");
        const rev = revs[panel.dataset.pane];
        if (rev && (!pane || pane.dataset.rev !== rev)) {
          await htmx.ajax("GET", panel.dataset.url, { target: panel, swap: "innerHTML" });
        }
      }
    } catch (err) {
      // A missed poll is retried on the next tick.
    } finally {
      polling = false;
      // How many polls have finished: lets a reader (or a test) tell that one has run.
      document.documentElement.dataset.polls = String(++polls);
    }
  }

  document.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr.status;
    if (status === 401) {
      location.assign("/admin/sign-in");
      return;
    }
    const notice = document.getElementById("notice");
    if (notice) notice.textContent = event.detail.xhr.responseText || "The request failed.";
    document.querySelectorAll("dialog[open]").forEach(function (d) { d.close(); });
  });

  setInterval(poll, POLL_MS);
})();
