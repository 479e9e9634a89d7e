// sitekeep sign-in wizard (SPEC §9, §10): polls the live browser's state preview and lets
// the person choose the cookies the profile keeps. The heuristic's pick is only the
// default: a person's tick or untick is kept in `chosen` and wins over every later poll;
// a cookie that appears later comes with its default. Expired cookies are shown, never
// selectable. Names and domains are set as text, never as markup.
(function () {
  "use strict";

  const aside = document.querySelector("[data-preview]");
  if (!aside) return;
  const POLL_MS = 2000;
  const domainsBox = aside.querySelector("[data-preview-domains]");
  const state = aside.querySelector("[data-preview-state]");
  const selection = aside.querySelector("[data-selection]");
  const saveError = aside.querySelector("[data-save-error]");
  const chosen = new Map(); // "domain\n name" → true/false, the person's own choices
  let latest = [];
  let polls = 0;

  function id(domain, name) { return domain + "\n" + name; }

  function isSelected(domain, cookie) {
    if (cookie.expired) return false;
    const key = id(domain, cookie.name);
    return chosen.has(key) ? chosen.get(key) : cookie.selected;
  }

  function when(cookie, now) {
    if (cookie.expired) return "";
    if (cookie.expiry === null) return "Session";
    const days = Math.floor((cookie.expiry - now) / 86400);
    return days < 1 ? "today" : days + " d";
  }

  function render(preview) {
    latest = preview.domains;
    domainsBox.replaceChildren();
    let count = 0;
    for (const group of preview.domains) {
      const box = document.createElement("fieldset");
      box.dataset.domain = group.domain;
      const legend = document.createElement("legend");
      const all = document.createElement("input");
      all.type = "checkbox";
      all.id = "dom-" + count;
      const selectable = group.cookies.filter(function (c) { return !c.expired; });
      all.checked = selectable.length > 0 && selectable.every(function (c) { return isSelected(group.domain, c); });
      all.disabled = selectable.length === 0;
      all.addEventListener("change", function () {
        selectable.forEach(function (c) { chosen.set(id(group.domain, c.name), all.checked); });
        render({ domains: latest, now: preview.now });
      });
      const allLabel = document.createElement("label");
      allLabel.htmlFor = all.id;
      allLabel.textContent = group.domain;
      legend.append(all, " ", allLabel);
      box.appendChild(legend);
      for (const cookie of group.cookies) {
        const row = document.createElement("div");
        row.className = "cookie" + (cookie.expired ? " expired" : "");
        const tick = document.createElement("input");
        tick.type = "checkbox";
        tick.id = "ck-" + (count++);
        tick.checked = isSelected(group.domain, cookie);
        tick.disabled = cookie.expired;
        tick.dataset.name = cookie.name;
        tick.addEventListener("change", function () {
          chosen.set(id(group.domain, cookie.name), tick.checked);
          render({ domains: latest, now: preview.now });
        });
        const label = document.createElement("label");
        label.htmlFor = tick.id;
        label.textContent = cookie.name;
        const meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent = " " + when(cookie, preview.now) +
          (cookie.http_only ? " · httpOnly" : "") + (cookie.secure ? " · Secure" : "");
        row.append(tick, " ", label, meta);
        if (cookie.expired) {
          // Shown so the person sees it went, never selectable (SPEC §9: never captured).
          const chip = document.createElement("span");
          chip.className = "pill chip-expired";
          chip.textContent = "expired";
          tick.setAttribute("aria-describedby", chip.id = "ex-" + tick.id);
          row.append(" ", chip);
        }
        box.appendChild(row);
      }
      domainsBox.appendChild(box);
    }
    state.textContent = preview.domains.length ? "" : "Nothing signed in yet.";
    selection.value = JSON.stringify(picked());
  }

  function picked() {
    const out = [];
    for (const group of latest) {
      for (const cookie of group.cookies) {
        if (isSelected(group.domain, cookie)) out.push({ domain: group.domain, name: cookie.name });
      }
    }
    return out;
  }

  async function poll() {
    if (document.hidden) return;
    try {
      const reply = await fetch(aside.dataset.preview, {
        credentials: "same-origin", headers: { Accept: "application/json" },
      });
      if (reply.ok) render(await reply.json());
    } catch (err) {
      // Retried on the next tick.
    } finally {
      aside.dataset.polls = String(++polls);
    }
  }

  aside.querySelector("[data-save]").addEventListener("submit", function (event) {
    const keep = picked();
    selection.value = JSON.stringify(keep);
    saveError.hidden = keep.length > 0;
    if (!keep.length) event.preventDefault();
  });

  poll();
  setInterval(poll, POLL_MS);
})();
