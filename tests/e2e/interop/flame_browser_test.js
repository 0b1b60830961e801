// The interactive flame graph (`sampo flame --html`, `--diff`) in a real browser: headless
// Chromium (Debian's) driven by playwright-core.  Hovers, zooms, searches, compares, and
// saves a screenshot of each state into OUTDIR (looked at by a person, kept by CI).
// usage: node flame_browser_test.js CHROMIUM PAGE.html DIFF.html OUTDIR
'use strict';
const path = require('path');
const { chromium } = require(path.join(__dirname, 'node_modules', 'playwright-core'));

const [exe, page1, page2, outdir] = process.argv.slice(2);
let fails = 0;
function check(name, ok, info) {
    console.log((ok ? 'ok   ' : 'FAIL ') + name + (ok || info === undefined ? '' : ': ' + info));
    if (!ok) fails++;
}

(async () => {
    const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1200, height: 500 } });
    const errors = [];
    page.on('pageerror', e => errors.push(String(e)));
    const requests = [];
    page.on('request', r => { if (!r.url().startsWith('file:')) requests.push(r.url()); });

    await page.goto('file://' + path.resolve(page1));
    await page.waitForSelector('.f');
    check('page loads without script errors', errors.length === 0, errors.join('; '));
    check('no network requests (self-contained)', requests.length === 0, requests.join(' '));
    const n = await page.locator('.f').count();
    check('frames drawn (' + n + ')', n >= 4);
    await page.screenshot({ path: path.join(outdir, 'flame-1-initial.png') });

    // hover: the details line names the frame, its weight and share
    const cxx = page.locator('.f[data-name="outer::inner::work(int)"]');
    await cxx.hover();
    const det = await page.locator('#details').textContent();
    check('hover shows name, time and share', /outer::inner::work\(int\)\n85\.000 ms \(34\.00% of all/.test(det), det);

    // zoom: a click makes the frame as wide as the graph; reset restores the root
    const gw = await page.locator('#graph').evaluate(e => e.clientWidth);
    const before = await cxx.evaluate(e => e.getBoundingClientRect().width);
    await cxx.click();
    const after = await page.locator('.f[data-name="outer::inner::work(int)"]')
        .evaluate(e => e.getBoundingClientRect().width);
    check('click zooms the frame to full width (' + before.toFixed(0) + ' -> ' + after.toFixed(0) + ' of ' + gw + ')',
          before < gw * 0.5 && Math.abs(after - gw) < 2);
    await page.screenshot({ path: path.join(outdir, 'flame-2-zoomed.png') });
    await page.click('#reset');
    const reset = await page.locator('.f[data-name="outer::inner::work(int)"]')
        .evaluate(e => e.getBoundingClientRect().width);
    check('reset zoom', Math.abs(reset - before) < 1, reset);

    // search: matches highlighted, matched share of the total
    await page.fill('#search', 'fmt|outer');
    const matched = await page.locator('#matched').textContent();
    check('search: matched share', matched === 'Matched: 66.40%', matched);
    const hl = await page.locator('.f.match').count();
    check('search: matches highlighted (' + hl + ')', hl === 2);
    await page.screenshot({ path: path.join(outdir, 'flame-3-search.png') });

    // the long UTF-8 name is drawn whole in its tooltip
    const longTitle = await page.locator('.f').evaluateAll(
        es => es.map(e => e.title).filter(t => t.length > 500)[0] || '');
    check('2 kB UTF-8 name intact in the page', longTitle.startsWith('Längst>>') &&
          longTitle.endsWith(';semi%pct"q'), longTitle.slice(-20));

    // differential page: the frame whose share grew is red, the ones that shrank blue
    await page.goto('file://' + path.resolve(page2));
    await page.waitForSelector('.f');
    const bg = async name => page.locator('.f[data-name="' + name + '"]')
        .evaluate(e => getComputedStyle(e).backgroundColor);
    const grew = await bg('outer::inner::work(int)'), shrank = await bg('core::fmt::write');
    const red = /^rgb\(255, (\d+), \1\)$/, blue = /^rgb\((\d+), \1, 255\)$/;
    check('diff: grown frame red (' + grew + ')', red.test(grew) && grew !== 'rgb(255, 255, 255)');
    check('diff: shrunk frame blue (' + shrank + ')', blue.test(shrank) && shrank !== 'rgb(255, 255, 255)');
    await page.locator('.f[data-name="outer::inner::work(int)"]').hover();
    const ddet = await page.locator('#details').textContent();
    check('diff: hover shows base and change', /base: .*change of share: \+?[0-9.]+ points/.test(ddet), ddet);
    await page.screenshot({ path: path.join(outdir, 'flame-4-diff.png') });
    check('diff page without script errors', errors.length === 0, errors.join('; '));
    await browser.close();
    console.log(fails + ' failure(s)');
    process.exit(fails ? 1 : 0);
})().catch(e => { console.log('FAIL ' + e); process.exit(1); });
