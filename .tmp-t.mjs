import { chromium } from 'playwright-core';
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
const page = await browser.newPage();
const t0 = Date.now();
await page.goto('file:///tmp/html-scale/reports-again/report.html', { timeout: 120000 });
await page.waitForSelector('body[data-ready="true"]', { timeout: 120000 });
console.log('total', Date.now() - t0);
console.log(await page.evaluate(() => { const n = performance.getEntriesByType('navigation')[0]; return { responseEnd: n.responseEnd, domInteractive: n.domInteractive, dcl: n.domContentLoadedEventStart, load: n.loadEventEnd, drawn: document.body.dataset.drawnMs }; }));
await browser.close();
