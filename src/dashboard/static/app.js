// The dashboard page: one Server-Sent Events stream (/live) carries the watch-fed state; the
// claims list is virtualised (only the rows in view exist in the DOM), drawing is batched per
// animation frame. State is always said in text and an icon, never by colour alone.

const STEPS = [
  "provision",
  "bind",
  "schedule",
  "attach",
  "publish",
  "expand",
  "modify",
  "snapshot",
  "unpublish",
  "detach",
  "delete",
];
const LABEL = { publish: "stage/publish", unpublish: "unpublish/unstage" };
const ICON = { done: "✓", now: "●", failed: "✗", idle: "○", skipped: "–" };
const STATE_TEXT = {
  done: "done",
  now: "waiting",
  failed: "failed",
  idle: "not reached",
  skipped: "does not apply",
};
const ROW_HEIGHT = 64;
const OVERSCAN = 6;

const claims = new Map();
let order = [];
let orderDirty = true;
let visible = [];
let selected = -1;
let openKey = "";
let events = [];
let metrics = { points: [], components: [], scraping: true };
let frame = 0;
const dirty = new Set();
window.csikitDashboard = { updates: 0, renders: 0, lastRenderMs: 0 };

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

function schedule(part) {
  dirty.add(part);
  if (!frame) frame = requestAnimationFrame(draw);
}

function draw() {
  frame = 0;
  const started = performance.now();
  if (dirty.has("claims")) drawClaims();
  if (dirty.has("nodes")) drawNodes();
  if (dirty.has("leases")) drawLeases();
  if (dirty.has("events")) drawEvents();
  if (dirty.has("metrics")) drawMetrics();
  if (dirty.has("detail")) drawDetail();
  dirty.clear();
  window.csikitDashboard.renders++;
  window.csikitDashboard.lastRenderMs = performance.now() - started;
}

// ---- live stream --------------------------------------------------------------------------

function connect() {
  const source = new EventSource("/live");
  source.onopen = () => ($("status").textContent = "live: connected (watching the API server)");
  source.onerror = () => ($("status").textContent = "disconnected: reconnecting…");
  source.onmessage = (message) => {
    const data = JSON.parse(message.data);
    window.csikitDashboard.updates++;
    switch (data.type) {
      case "claims":
        for (const row of data.upsert) {
          if (!claims.has(row.key)) orderDirty = true;
          claims.set(row.key, row);
          if (row.key === openKey) dirty.add("detail");
        }
        for (const key of data.remove) {
          claims.delete(key);
          orderDirty = true;
        }
        schedule("claims");
        break;
      case "nodes":
        nodes = data.nodes;
        schedule("nodes");
        break;
      case "leases":
        leases = data.leases;
        schedule("leases");
        break;
      case "events":
        for (const event of data.events) {
          events = events.filter((e) => e.uid !== event.uid);
          events.push(event);
        }
        if (events.length > 500) events = events.slice(-500);
        schedule("events");
        break;
      case "metrics":
        metrics.components = data.components;
        if (data.scraping !== undefined) metrics.scraping = data.scraping;
        metrics.points = metrics.points.concat(data.points).slice(-120);
        schedule("metrics");
        break;
    }
  };
}

let nodes = [];
let leases = [];

// ---- cluster ------------------------------------------------------------------------------

function yesNo(ok, yes, no) {
  return el("span", { class: ok ? "ok" : "bad", text: `${ok ? "✓" : "✗"} ${ok ? yes : no}` });
}

function drawNodes() {
  const body = $("nodes").tBodies[0];
  body.replaceChildren(
    ...nodes.map((n) =>
      el(
        "tr",
        { "data-node": n.name },
        el("th", { scope: "row", text: n.name }),
        el("td", { text: n.zone || "—" }),
        el("td", {}, yesNo(n.ready, "Ready", "NotReady")),
        el("td", {}, yesNo(n.drivers.length > 0, n.drivers.join(", "), "none registered")),
        el("td", { text: `${n.attached} / ${n.allocatable || "no limit"}` }),
      ),
    ),
  );
}

function drawLeases() {
  $("leases").tBodies[0].replaceChildren(
    ...leases.map((l) =>
      el(
        "tr",
        {},
        el("th", { scope: "row", text: `${l.namespace}/${l.name}` }),
        el("td", { text: l.holder || "—" }),
        el("td", {}, yesNo(!l.expired, "held", "expired")),
      ),
    ),
  );
}

// ---- claims (virtualised) -----------------------------------------------------------------

function matches(row, text, onlyFailed) {
  if (onlyFailed && !row.failed) return false;
  if (!text) return true;
  return row.key.includes(text) || row.phase.toLowerCase().includes(text) || row.current.includes(text);
}

function filtered() {
  if (orderDirty) {
    order = [...claims.keys()].sort();
    orderDirty = false;
  }
  const text = $("claim-filter").value.trim().toLowerCase();
  const onlyFailed = $("claim-stuck").checked;
  return order.filter((key) => matches(claims.get(key), text, onlyFailed));
}

function stepChip(step) {
  const label = LABEL[step.step] ?? step.step;
  return el(
    "li",
    {
      class: `st ${step.state}`,
      "data-step": step.step,
      "data-state": step.state,
      title: `${label}: ${STATE_TEXT[step.state]}${step.message ? ` — ${step.message}` : ""}`,
    },
    el("span", { "aria-hidden": "true", text: ICON[step.state] }),
    ` ${label}`,
    el("span", { class: "sr", text: ` ${STATE_TEXT[step.state]}` }),
  );
}

function claimRow(row, index) {
  const node = claimRowNode(row, index);
  // CSSOM, not a style attribute: the page's CSP allows no inline styles.
  node.style.top = `${index * ROW_HEIGHT}px`;
  return node;
}

function claimRowNode(row, index) {
  const current = row.steps.find((s) => s.step === row.current);
  const note = current
    ? `${current.state === "failed" ? "✗ failed at" : "● waiting in"} ${LABEL[current.step] ?? current.step}${current.message ? `: ${current.message}` : ""}`
    : row.deleted
      ? "✓ deleted"
      : "✓ nothing waiting";
  return el(
    "div",
    {
      class: `vrow${row.failed ? " failed" : ""}${index === selected ? " selected" : ""}`,
      role: "option",
      "aria-selected": String(index === selected),
      id: `claim-${index}`,
      "data-claim": row.key,
      "data-phase": row.phase,
      "data-current": row.current,
    },
    el(
      "div",
      { class: "vhead" },
      el("strong", { text: row.key }),
      el("span", { class: "phase", text: ` ${row.phase}` }),
      el("span", {
        class: "dim",
        text: ` ${row.size}${row.capacity && row.capacity !== row.size ? ` (has ${row.capacity})` : ""} ${row.storageClass}${row.node ? ` on ${row.node}` : ""}`,
      }),
      el("span", { class: `note${row.failed ? " bad" : ""}`, text: ` — ${note}` }),
    ),
    el("ol", { class: "steps", "aria-label": "journey" }, ...row.steps.map(stepChip)),
  );
}

function drawClaims() {
  visible = filtered();
  const list = $("claim-list");
  $("claim-count").textContent = `(${visible.length} of ${claims.size})`;
  const space = list.firstElementChild;
  space.style.height = `${visible.length * ROW_HEIGHT}px`;
  const first = Math.max(0, Math.floor(list.scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(
    visible.length,
    Math.ceil((list.scrollTop + list.clientHeight) / ROW_HEIGHT) + OVERSCAN,
  );
  const rows = [];
  for (let i = first; i < last; i++) rows.push(claimRow(claims.get(visible[i]), i));
  list.replaceChildren(space, ...rows);
  if (selected >= 0) list.setAttribute("aria-activedescendant", `claim-${selected}`);
}

function select(index) {
  if (visible.length === 0) return;
  selected = Math.max(0, Math.min(visible.length - 1, index));
  const list = $("claim-list");
  const top = selected * ROW_HEIGHT;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (top + ROW_HEIGHT > list.scrollTop + list.clientHeight)
    list.scrollTop = top + ROW_HEIGHT - list.clientHeight;
  schedule("claims");
}

function open(key) {
  openKey = key;
  schedule("detail");
}

// ---- detail + actions ---------------------------------------------------------------------

async function post(body) {
  const response = await fetch("/api/action", {
    method: "POST",
    headers: { "content-type": "application/json", "x-csikit-dashboard": "1" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error ?? `HTTP ${response.status}`);
  return answer.message;
}

function confirmThen(text, action) {
  const dialog = $("confirm-dialog");
  $("confirm-text").textContent = text;
  dialog.returnValue = "";
  dialog.showModal();
  dialog.addEventListener(
    "close",
    async () => {
      if (dialog.returnValue !== "ok") return;
      try {
        $("status").textContent = await action();
      } catch (error) {
        $("status").textContent = `✗ ${error.message}`;
      }
    },
    { once: true },
  );
}

function drawDetail() {
  const box = $("detail");
  const row = claims.get(openKey);
  if (!row) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const [namespace, name] = row.key.split("/");
  const steps = el(
    "ol",
    { class: "journey" },
    ...row.steps.map((s) =>
      el(
        "li",
        { class: `st ${s.state}`, "data-step": s.step, "data-state": s.state },
        el("span", { "aria-hidden": "true", text: `${ICON[s.state]} ` }),
        el("strong", { text: LABEL[s.step] ?? s.step }),
        ` — ${STATE_TEXT[s.state]}${s.message ? `: ${s.message}` : ""}`,
      ),
    ),
  );
  const size = el("input", { "aria-label": "new size", value: row.size, size: "6" });
  const vac = el("input", {
    "aria-label": "VolumeAttributesClass",
    value: row.volumeAttributesClass,
    size: "12",
  });
  const why = el("pre", { class: "why", "data-why": row.key });
  const button = (text, onClick) => {
    const b = el("button", { type: "button", text });
    b.addEventListener("click", onClick);
    return b;
  };
  box.replaceChildren(
    el("h3", { text: `${row.key} — ${row.phase}` }),
    el("p", {
      text: `volume ${row.volume || "—"}, ${row.accessModes || "—"}, ${row.volumeMode}, pods ${row.pods.join(", ") || "none"}`,
    }),
    steps,
    el(
      "div",
      { class: "actions" },
      size,
      button("Grow…", () =>
        confirmThen(`Grow ${row.key} to ${size.value}?`, () =>
          post({ action: "grow", namespace, name, size: size.value }),
        ),
      ),
      vac,
      button("Change class…", () =>
        confirmThen(`Move ${row.key} to VolumeAttributesClass ${vac.value}?`, () =>
          post({ action: "modify", namespace, name, volumeAttributesClass: vac.value }),
        ),
      ),
      button("Snapshot…", () =>
        confirmThen(`Snapshot ${row.key}?`, () => post({ action: "snapshot", namespace, name })),
      ),
      button("Delete…", () =>
        confirmThen(`Delete ${row.key} and the pods using it?`, () =>
          post({ action: "delete", namespace, name }),
        ),
      ),
      button("Why?", async () => {
        why.textContent = "asking…";
        const response = await fetch(
          `/api/why?namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(name)}`,
        );
        const answer = await response.json();
        why.textContent = answer.text ?? answer.error;
      }),
      button("Close", () => {
        openKey = "";
        box.hidden = true;
        $("claim-list").focus();
      }),
    ),
    why,
  );
}

// ---- events -------------------------------------------------------------------------------

function drawEvents() {
  const object = $("event-object").value.trim();
  const type = $("event-type").value;
  const shown = events
    .filter((e) => (!type || e.type === type) && (!object || e.object.includes(object)))
    .slice(-200)
    .reverse();
  $("events").replaceChildren(
    ...shown.map((e) =>
      el(
        "li",
        { class: e.type === "Warning" ? "warning" : "", "data-reason": e.reason },
        el("span", { class: "dim", text: `${e.time.slice(11, 19)} ` }),
        el("strong", { text: `${e.type === "Warning" ? "⚠ Warning" : "ℹ Normal"} ${e.reason}` }),
        ` ${e.object}${e.count > 1 ? ` ×${e.count}` : ""}: ${e.message}`,
      ),
    ),
  );
}

// ---- metrics (inline SVG) -----------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svgChart(title, series, unit) {
  const width = 360;
  const height = 120;
  const max = Math.max(1e-9, ...series.flatMap((s) => s.values));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height + 20}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${title}; max ${max.toFixed(2)} ${unit}`);
  const dashes = ["", "4 2", "1 2", "6 2 1 2"];
  series.forEach((s, i) => {
    const n = s.values.length;
    const points = s.values
      .map((v, j) => `${(j / Math.max(1, n - 1)) * width},${height - (v / max) * height}`)
      .join(" ");
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points);
    line.setAttribute("class", `series s${i % 6}`);
    if (dashes[i % 4]) line.setAttribute("stroke-dasharray", dashes[i % 4]);
    svg.append(line);
  });
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", "2");
  label.setAttribute("y", String(height + 16));
  label.textContent = `max ${max.toFixed(2)} ${unit}`;
  svg.append(label);
  return el(
    "figure",
    {},
    el("figcaption", { text: title }),
    svg,
    el(
      "ul",
      { class: "keys" },
      ...series.map((s, i) =>
        el("li", { class: `s${i % 6}`, text: `${["━", "╍", "┈", "┉"][i % 4]} ${s.name}: ${s.last}` }),
      ),
    ),
  );
}

function drawMetrics() {
  const box = $("metrics");
  const components = metrics.components ?? [];
  $("components").tBodies[0].replaceChildren(
    ...components.map((c) =>
      el(
        "tr",
        { "data-component": c.instance },
        el("th", { scope: "row", text: c.what }),
        el("td", {}, yesNo(c.healthy, "healthy", c.health)),
      ),
    ),
  );
  if (!metrics.scraping) {
    box.replaceChildren(
      el("p", { text: "no component metrics endpoints known (csikit dashboard against another cluster)" }),
    );
    return;
  }
  const points = metrics.points;
  if (points.length === 0) return;
  const keys = [...new Set(points.flatMap((p) => p.methods.map((m) => m.key)))].sort();
  const series = (pick) =>
    keys.map((key) => {
      const values = points.map((p) => pick(p.methods.find((m) => m.key === key)));
      return { name: key, values, last: values[values.length - 1].toFixed(2) };
    });
  const ops = series((m) => m?.opsPerSecond ?? 0).filter((s) => s.values.some((v) => v > 0));
  const latency = series((m) => m?.meanMs ?? 0).filter((s) => s.values.some((v) => v > 0));
  const queueKeys = [...new Set(points.flatMap((p) => Object.keys(p.queues)))].sort();
  const queues = queueKeys.map((key) => {
    const values = points.map((p) => p.queues[key] ?? 0);
    return { name: key, values, last: String(values[values.length - 1]) };
  });
  const last = points[points.length - 1];
  const table = el(
    "table",
    { id: "methods" },
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ...["component method", "calls", "errors", "ops/s", "mean ms"].map((t) =>
          el("th", { scope: "col", text: t }),
        ),
      ),
    ),
    el(
      "tbody",
      {},
      ...last.methods
        .filter((m) => m.total > 1)
        .sort((a, b) => b.total - a.total)
        .slice(0, 15)
        .map((m) =>
          el(
            "tr",
            {},
            el("th", { scope: "row", text: m.key }),
            el("td", { text: String(m.total) }),
            el("td", { text: String(m.errors) }),
            el("td", { text: m.opsPerSecond.toFixed(2) }),
            el("td", { text: m.meanMs.toFixed(1) }),
          ),
        ),
    ),
  );
  box.replaceChildren(
    el(
      "div",
      { class: "charts" },
      svgChart(
        "CSI operations per second (per component method)",
        ops.length ? ops : [{ name: "no calls", values: [0], last: "0" }],
        "ops/s",
      ),
      svgChart(
        "Mean latency (ms)",
        latency.length ? latency : [{ name: "no calls", values: [0], last: "0" }],
        "ms",
      ),
      svgChart(
        "Work-queue depth",
        queues
          .filter((q) => q.values.some((v) => v > 0))
          .slice(0, 8)
          .concat(queues.length ? [] : [{ name: "no queues", values: [0], last: "0" }]),
        "items",
      ),
    ),
    table,
  );
}

// ---- forms and keys -----------------------------------------------------------------------

async function openCreate() {
  const response = await fetch("/api/options");
  const options = await response.json();
  const form = $("create-form");
  const fill = (name, values, preferred) => {
    const select = form.elements[name];
    select.replaceChildren(...values.map((v) => el("option", { value: v, text: v })));
    if (values.includes(preferred)) select.value = preferred;
  };
  fill("namespace", options.namespaces, "default");
  fill("storageClass", options.storageClasses, "csi-hostpath");
  fill("accessMode", options.accessModes, "ReadWriteOnce");
  fill("volumeMode", options.volumeModes, "Filesystem");
  $("create-dialog").showModal();
}

function init() {
  const list = $("claim-list");
  list.addEventListener("scroll", () => schedule("claims"), { passive: true });
  list.addEventListener("keydown", (event) => {
    const page = Math.max(1, Math.floor(list.clientHeight / ROW_HEIGHT));
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    if (event.key in moves) select(selected + moves[event.key]);
    else if (event.key === "Home") select(0);
    else if (event.key === "End") select(visible.length - 1);
    else if (event.key === "Enter" && selected >= 0) {
      open(visible[selected]);
      setTimeout(() => $("detail").focus(), 0);
    } else return;
    event.preventDefault();
  });
  list.addEventListener("click", (event) => {
    const row = event.target.closest("[data-claim]");
    if (!row) return;
    selected = visible.indexOf(row.dataset.claim);
    open(row.dataset.claim);
    schedule("claims");
  });
  for (const id of ["claim-filter", "claim-stuck"]) $(id).addEventListener("input", () => schedule("claims"));
  for (const id of ["event-object", "event-type"]) $(id).addEventListener("input", () => schedule("events"));
  $("create-open").addEventListener("click", () => void openCreate());
  $("create-dialog").addEventListener("close", () => {
    if ($("create-dialog").returnValue !== "ok") return;
    const data = Object.fromEntries(new FormData($("create-form")));
    confirmThen(
      `Create claim ${data.namespace}/${data.name} (${data.size}, ${data.accessMode}, ${data.volumeMode}, class ${data.storageClass}) and pod ${data.name}-pod?`,
      () => post({ action: "create", ...data }),
    );
  });
  connect();
}

init();
