// The admin as an operator uses it, in Debian's headless chromium through
// playwright-core: sign in, the dashboard and its chart, filter events by
// account, open a held event, apply it with a note and see the balance and
// the audit row change, a Stripe event's signature header, a gap, a
// sequence guard, the held queue (preview and dismiss one), the
// verification failures and the audit log, watch a forged cross-site POST
// be refused, sign out. tests/api/ui.rs starts the server, seeds it with
// ids as long as real ones and runs this; any failed check exits non-zero.
//
// Every page is also looked at on a 390 px phone: it must not be wider than
// the phone (document.documentElement.scrollWidth), and no long id, hash or
// header value on it may break across lines. A screenshot of each page at
// 1280 px and at 390 px goes to $SHOTS.
//
// Environment: BASE (http://127.0.0.1:port), TOKEN (admin token), SHOTS
// (folder), NAME (prefix of the screenshots), CHROMIUM (executable), IDS
// (JSON: the account and event ids ui.rs seeded).
import { chromium } from "playwright-core";
import http from "node:http";
import assert from "node:assert/strict";

const { BASE, TOKEN, SHOTS, NAME, CHROMIUM, IDS } = process.env;
const ids = JSON.parse(IDS);
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
// A run of this many characters without a space is an id, a hash or a
// header value: no English word on the pages is as long.
const LONG_TOKEN = /\S{20,}/g;

// What each page measured on a phone, by URL, and every URL the flow's tab
// showed: at the end, every one of them must have been measured.
const measured = new Map();
const visited = new Set();

// The page as laid out now: how wide it is, and the long tokens whose text
// lies on more than one line (broken mid-token).
function layout(pattern) {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.data.matchAll(new RegExp(pattern, "g"))) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(match[0]);
    }
  }
  return { width: document.documentElement.scrollWidth, broken };
}

// Screenshots the page at 1280 px, then lays it out at 390 px and records
// what it measured there.
async function look(page, step) {
  await page.screenshot({ path: `${SHOTS}/${NAME}-${step}.png`, fullPage: true });
  await page.setViewportSize(PHONE);
  const { width, broken } = await page.evaluate(layout, LONG_TOKEN.source);
  await page.screenshot({ path: `${SHOTS}/${NAME}-${step}-390.png`, fullPage: true });
  await page.setViewportSize(DESKTOP);
  measured.set(page.url(), { step, width, broken });
  const cut = broken.map((t) => `${t.slice(0, 24)}...`).join(", ");
  console.log(`${PHONE.width} px: ${step} is ${width} px wide${cut ? `; broken mid-token: ${cut}` : ""}`);
}

// Fails with every page that was too wide or broke a token, and every page
// the tab showed that was never measured.
function assertFitsAPhone() {
  const unmeasured = [...visited].filter((url) => !measured.has(url));
  assert.deepEqual(unmeasured, [], "pages shown but not measured at 390 px");
  const misfits = [...measured.values()].filter(
    (m) => m.width > PHONE.width || m.broken.length > 0,
  );
  assert.deepEqual(
    misfits.map((m) => `${m.step}: ${m.width} px, ${m.broken.length} token(s) broken`),
    [],
    `pages wider than ${PHONE.width} px or breaking an id`,
  );
}

const eventUrl = (source, id) =>
  `${BASE}/admin/event?source=${source}&id=${encodeURIComponent(id)}`;
const isEvent = (id) => (url) => url.pathname === "/admin/event" && url.searchParams.get("id") === id;

const browser = await chromium.launch({
  executablePath: CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: DESKTOP });
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame() && frame.url().startsWith(BASE)) visited.add(frame.url());
  });

  // Sign in.
  await page.goto(`${BASE}/admin`);
  await look(page, "0-sign-in");
  await page.fill("#token", TOKEN);
  // The sign-in form is at /admin too, so the URL cannot tell that the
  // dashboard has come: wait for its chart, then for the whole page, before
  // counting anything on it (an h1 can be there before the rest is parsed).
  await page.click("form.login button");
  await page.locator("figure.chart").waitFor();
  await page.waitForLoadState("load");
  assert.match(await page.textContent("h1"), /Held for an operator \(3\)/);

  // The dashboard and its chart: one bar per 10 minutes with deliveries.
  const bars = await page.locator("figure.chart svg g").count();
  assert.ok(bars >= 1, `chart bars: ${bars}`);
  const applied = await page.locator("figure.chart rect.applied").count();
  assert.ok(applied >= 1, "an applied bar");
  await look(page, "1-dashboard");

  // Events, filtered by account.
  await page.click("nav.pages >> text=Events");
  await page.waitForURL(/\/admin\/events$/);
  await look(page, "2-events-all");
  await page.fill("input[name=account]", ids.account);
  await Promise.all([page.waitForURL(/account=cus_/), page.click("form.filters button")]);
  const accounts = await page.locator("table tbody tr td:nth-child(5)").allTextContents();
  assert.ok(accounts.length === 2, `two events of ${ids.account}: ${accounts}`);
  assert.ok(accounts.every((a) => a.trim() === ids.account), `only ${ids.account}: ${accounts}`);
  await look(page, "2-events-filtered");

  // The held event: the preview, then apply with a note.
  await page.click(`a.trunc[title="${ids.refund}"]`);
  await page.waitForURL(isEvent(ids.refund));
  assert.match(await page.textContent("p.preview"), /\$15\.00 → \$12\.00/);
  await look(page, "3-held-event");
  // The note is required: the browser refuses to submit without it.
  await page.click("button.primary");
  await page.waitForTimeout(300);
  assert.ok(isEvent(ids.refund)(new URL(page.url())) && !page.url().includes("done="), "no note, no post");
  await page.fill("#note", "refund confirmed with billing");
  await Promise.all([page.waitForURL(/done=apply/), page.click("button.primary")]);
  assert.match(
    await page.textContent("p.notice"),
    new RegExp(`Applied: -\\$3\\.00 to ${ids.account}; its balance is now \\$12\\.00\\.`),
  );
  const audit = await page.locator("table tbody tr").allTextContents();
  assert.ok(
    audit.some((row) => row.includes("apply") && row.includes("admin (browser)") && row.includes("refund confirmed with billing")),
    `audit row: ${audit}`,
  );
  await look(page, "4-applied");

  // The account page shows the new balance.
  await page.click("dd.id a");
  await page.waitForURL((url) => url.pathname === "/admin/account" && url.searchParams.get("id") === ids.account);
  assert.match(await page.textContent("table.balances"), /\$12\.00/);
  await look(page, "5-account");

  // A Stripe event: the signature header it was received with, whole.
  await page.goto(eventUrl("stripe", ids.stripe));
  assert.match(await page.textContent("dl.headers"), /t=\d+,v1=[0-9a-f]{64}/);
  await look(page, "6-stripe-event");

  // The gap its source waits behind, and a sequence guard.
  await page.goto(`${BASE}/admin/gap?source=ledger&account=${ids.otherAccount}`);
  assert.match(await page.textContent("h1"), /waiting behind a gap/);
  await look(page, "7-gap");
  await page.goto(`${BASE}/admin/guard?source=demo&account=${ids.account}`);
  assert.match(await page.textContent("h1"), /sequence guard/);
  await look(page, "8-guard");

  // The held queue: choose one, preview dismissing it, dismiss it.
  await page.click("nav.pages >> text=Held");
  await page.waitForURL(/\/admin\/held$/);
  await look(page, "9-held");
  await page.check(`input[aria-label="choose ${ids.dismissed}"]`);
  await Promise.all([page.waitForURL(/\/admin\/held\/preview$/), page.click("button[value=dismiss]")]);
  await look(page, "10-held-preview");
  await page.fill("#note", "duplicate of a refund billing already made");
  await Promise.all([page.waitForURL(/\/admin\/held\/act$/), page.click("form.resolve button[type=submit]")]);
  assert.match(await page.textContent("h1"), /1 of 1 done/);
  await look(page, "11-held-done");

  // Why deliveries failed, and the audit log.
  await page.click("nav.pages >> text=Failures");
  await page.waitForURL(/\/admin\/failures$/);
  assert.equal(await page.locator("table.failures tbody tr").count(), 1);
  await look(page, "12-failures");
  await page.click("nav.pages >> text=Audit log");
  await page.waitForURL(/\/admin\/audit$/);
  assert.equal(await page.locator("table.audit tbody tr").count(), 2);
  await look(page, "13-audit");

  // A forged cross-site POST: another site's page submits a form to the
  // admin. SameSite=Strict keeps the cookie home; the Origin check and the
  // CSRF token refuse it anyway. Nothing changes.
  const target = `${BASE}/admin/event/dismiss?source=demo&id=${encodeURIComponent(ids.late)}`;
  const evil = http.createServer((_, res) => {
    res.setHeader("content-type", "text/html");
    res.end(`<form method="post" action="${target}"><input name="note" value="x"><input name="csrf" value="x"><button>go</button></form>`);
  });
  await new Promise((ready) => evil.listen(0, "localhost", ready));
  const evilPage = await browser.newPage();
  await evilPage.goto(`http://localhost:${evil.address().port}/`);
  const [response] = await Promise.all([
    evilPage.waitForResponse((r) => r.url().startsWith(`${BASE}/admin/event/dismiss`)),
    evilPage.click("button"),
  ]);
  assert.ok([401, 403].includes(response.status()), `forged POST: ${response.status()}`);
  evil.close();
  await page.goto(eventUrl("demo", ids.late));
  assert.match(await page.textContent("dl"), /stale/);
  await look(page, "14-late-event");

  // Sign out: the admin is gone, the sign-in form is back.
  await Promise.all([page.waitForURL(`${BASE}/admin`), page.click("form.logout button")]);
  assert.match(await page.textContent("h1"), /Sign in/);
  await page.goto(`${BASE}/admin/account?id=${ids.account}`);
  assert.match(await page.textContent("h1"), /Sign in/);
  await look(page, "15-signed-out");

  assertFitsAPhone();
  console.log("ui flow passed");
} finally {
  await browser.close();
}
