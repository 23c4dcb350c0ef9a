// The admin as an operator uses it, in Debian's headless chromium through
// playwright-core: sign in, the dashboard and its chart, filter events by
// account, open a held event, apply it with a note and see the balance and
// the audit row change, watch a forged cross-site POST be refused, sign
// out. A screenshot of each page goes to $SHOTS. tests/api/ui.rs starts the
// server, seeds it and runs this; any failed check exits non-zero.
//
// Environment: BASE (http://127.0.0.1:port), TOKEN (admin token), SHOTS
// (folder), NAME (prefix of the screenshots), CHROMIUM (executable).
import { chromium } from "playwright-core";
import http from "node:http";
import assert from "node:assert/strict";

const { BASE, TOKEN, SHOTS, NAME, CHROMIUM } = process.env;
const shot = (page, step) =>
  page.screenshot({ path: `${SHOTS}/${NAME}-${step}.png`, fullPage: true });

const browser = await chromium.launch({
  executablePath: CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });

  // Sign in.
  await page.goto(`${BASE}/admin`);
  await page.fill("#token", TOKEN);
  // The sign-in form is at /admin too, so the URL cannot tell that the
  // dashboard has come: wait for its chart, then for the whole page, before
  // counting anything on it (an h1 can be there before the rest is parsed).
  await page.click("form.login button");
  await page.locator("figure.chart").waitFor();
  await page.waitForLoadState("load");
  assert.match(await page.textContent("h1"), /Held for an operator \(2\)/);

  // The dashboard and its chart: one bar per 10 minutes with deliveries.
  const bars = await page.locator("figure.chart svg g").count();
  assert.ok(bars >= 1, `chart bars: ${bars}`);
  const applied = await page.locator("figure.chart rect.applied").count();
  assert.ok(applied >= 1, "an applied bar");
  await shot(page, "1-dashboard");

  // Events, filtered by account.
  await page.click("nav.pages >> text=Events");
  await page.fill("input[name=account]", "cus_42");
  await Promise.all([page.waitForURL(/account=cus_42/), page.click("form.filters button")]);
  const accounts = await page.locator("table tbody tr td:nth-child(5)").allTextContents();
  assert.ok(accounts.length === 2, `two events of cus_42: ${accounts}`);
  assert.ok(accounts.every((a) => a.trim() === "cus_42"), `only cus_42: ${accounts}`);
  await shot(page, "2-events");

  // The held event: the preview, then apply with a note.
  await page.click("a.trunc[title=refund_1]");
  await page.waitForURL(/id=refund_1/);
  assert.match(await page.textContent("p.preview"), /\$15\.00 → \$12\.00/);
  await shot(page, "3-held-event");
  // The note is required: the browser refuses to submit without it.
  await page.click("button.primary");
  await page.waitForTimeout(300);
  assert.ok(page.url().includes("id=refund_1") && !page.url().includes("done="), "no note, no post");
  await page.fill("#note", "refund confirmed with billing");
  await Promise.all([page.waitForURL(/done=apply/), page.click("button.primary")]);
  assert.match(
    await page.textContent("p.notice"),
    /Applied: -\$3\.00 to cus_42; its balance is now \$12\.00\./,
  );
  const audit = await page.locator("table tbody tr").allTextContents();
  assert.ok(
    audit.some((row) => row.includes("apply") && row.includes("admin (browser)") && row.includes("refund confirmed with billing")),
    `audit row: ${audit}`,
  );
  await shot(page, "4-applied");

  // The account page shows the new balance.
  await page.click("dd.id a");
  await page.waitForURL(/\/admin\/account\?id=cus_42/);
  assert.match(await page.textContent("table.balances"), /\$12\.00/);
  await shot(page, "5-account");

  // A forged cross-site POST: another site's page submits a form to the
  // admin. SameSite=Strict keeps the cookie home; the Origin check and the
  // CSRF token refuse it anyway. Nothing changes.
  const target = `${BASE}/admin/event/dismiss?source=demo&id=late_2`;
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
  await page.goto(`${BASE}/admin/event?source=demo&id=late_2`);
  assert.match(await page.textContent("dl"), /stale/);

  // Sign out: the admin is gone, the sign-in form is back.
  await Promise.all([page.waitForURL(`${BASE}/admin`), page.click("form.logout button")]);
  assert.match(await page.textContent("h1"), /Sign in/);
  await page.goto(`${BASE}/admin/account?id=cus_42`);
  assert.match(await page.textContent("h1"), /Sign in/);
  await shot(page, "6-signed-out");
  console.log("ui flow passed");
} finally {
  await browser.close();
}
