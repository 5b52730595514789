/**
 * End-to-end in real VS Code (code-server + chromium, 1400x900), the editor telling the truth, in both themes:
 *  - the Python sample's undecorated `def solve(task, llm)` gets its CodeLens, and Train This Agent offers it first
 *    while its file is open;
 *  - no task-file pick offers the rag sample's corpus.jsonl (documents, not tasks);
 *  - a Train cancelled at a pick leaves "last used" as it was; one that runs marks its agent;
 *  - the CodeLens's ⚡ Train trains the Python agent (a real `agl train` through the runner's Python path) and the
 *    dashboard opens on its run;
 *  - switching VS Code between its light and dark theme redraws the open dashboard's charts in the new theme's
 *    colours (read from the canvas pixels), without reopening it;
 *  - the trajectory viewer's focused row is outlined in the focus colour of either theme.
 * Screenshots: test-results/e2e/editor-*.png.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gotoLine, openFile, pickItem, ROOT, runCommand, webview, webviewWith, type FrameLocator, type Page, inWorkbench } from './harness.js';

/** The line (1-based) of calc-py's agent. */
const SOLVE_LINE =
  readFileSync(join(ROOT, 'samples', 'calc-py', 'calc_agent.py'), 'utf8')
    .split('\n')
    .findIndex((l) => l.startsWith('def solve(task, llm):')) + 1;

/** The quick pick's rows as shown (label and description). */
const pickRows = (page: Page) => page.locator('.quick-input-list .monaco-list-row').allInnerTexts();

/** Escape out of the open quick pick (the command is cancelled there). */
async function cancelPick(page: Page): Promise<void> {
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

/** The theme's colour of a CSS variable inside a webview, and how many pixels of it the reward chart's canvas holds. */
function axisPixels(frame: FrameLocator, variable: string, color?: string): Promise<{ color: string; pixels: number }> {
  return frame.locator('.chart-card[data-chart="reward"] canvas').evaluate(
    (canvas, { variable, color }) => {
      const want = color ?? getComputedStyle(document.body).getPropertyValue(variable).trim();
      const probe = document.createElement('span');
      probe.style.color = want;
      document.body.append(probe);
      const rgb = getComputedStyle(probe).color.match(/\d+/g)!.map(Number);
      probe.remove();
      const c = canvas as HTMLCanvasElement;
      const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let pixels = 0;
      for (let i = 0; i < data.length; i += 4)
        if (data[i + 3]! >= 160 && Math.abs(data[i]! - rgb[0]!) + Math.abs(data[i + 1]! - rgb[1]!) + Math.abs(data[i + 2]! - rgb[2]!) <= 45) pixels++;
      return { color: want, pixels };
    },
    { variable, color },
  );
}

/** The body's theme class VS Code gave a webview: vscode-light or vscode-dark. */
const themeOf = (frame: FrameLocator) => frame.locator('body').evaluate((b) => (b.classList.contains('vscode-dark') ? 'dark' : 'light'));

test(
  'VS Code: a Python agent trains from its CodeLens; picks offer no corpus, cancel keeps "last used"; charts and focus follow the theme',
  { timeout: 15 * 60_000 },
  async () => {
    await inWorkbench({ shots: 'editor', folder: join(ROOT, 'samples'), settings: { 'agentLightning.groupSize': 2 } }, async ({ page, shot, mark }) => {
      // 1. The Python sample: solve(task, llm) has no decorator, and gets its CodeLens.
      await openFile(page, 'calc-py/calc_agent.py');
      await gotoLine(page, SOLVE_LINE + 12); // the def in view, with lines above it
      const lens = page.locator('.monaco-editor .codelens-decoration', { hasText: '⚡ Train' }).first();
      await lens.waitFor({ state: 'visible', timeout: 60_000 });
      assert.match(await lens.innerText(), /no rollouts yet.*▶ Run.*⚡ Train/s);
      const lensLine = await page.locator('.monaco-editor .view-line', { hasText: 'def solve(task, llm):' }).boundingBox();
      const lensBox = await lens.boundingBox();
      assert.ok(lensLine && lensBox && lensBox.y < lensLine.y && lensLine.y - lensBox.y < 40, 'the lens sits right above def solve');
      await shot('01-python-codelens');
      mark('python codelens');

      // 2. Train This Agent with the cursor outside any agent: the open file's solve first; its task picks offer no corpus.
      await gotoLine(page, 1); // the cursor on the module docstring, in no agent
      await runCommand(page, 'Agent Lightning: Train This Agent');
      await page.locator('.quick-input-widget .quick-input-title', { hasText: /which agent to train/ }).waitFor({ state: 'visible', timeout: 30_000 });
      const agents = await pickRows(page);
      // A row's text also holds the separator above it ("in calc-py/calc_agent.py").
      assert.match(
        agents[0] ?? '',
        /^solve\s*samples\/calc-py\/calc_agent\.py:solve\s*in calc-py\/calc_agent\.py$/,
        `solve, under the open file: ${agents.join(' | ')}`,
      );
      assert.ok(!agents.some((a) => /last used/.test(a)), `no agent was used yet: ${agents.join(' | ')}`);
      await shot('02-python-agent-offered');
      await pickItem(page, 'calc_agent.py:solve', /which agent/);
      await page.locator('.quick-input-widget .quick-input-title', { hasText: /Train solve: training data/ }).waitFor({ state: 'visible', timeout: 30_000 });
      const input = page.locator('.quick-input-widget .quick-input-box input');
      await input.fill('rag/data');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'rag/data/train.jsonl' }).first().waitFor({ state: 'visible' });
      const ragFiles = await pickRows(page);
      assert.ok(!ragFiles.some((r) => /corpus\.jsonl/.test(r)), `the rag corpus holds no tasks: ${ragFiles.join(' | ')}`);
      await shot('03-no-corpus');
      await cancelPick(page); // cancelled at the training data

      // 3. Cancelled: solve is not "last used".
      await runCommand(page, 'Agent Lightning: Train This Agent');
      await page.locator('.quick-input-widget .quick-input-title', { hasText: /which agent to train/ }).waitFor({ state: 'visible', timeout: 30_000 });
      const again = await pickRows(page);
      assert.ok(!again.some((a) => /last used/.test(a)), `a Train cancelled at a pick marks no agent as last used: ${again.join(' | ')}`);
      await cancelPick(page);
      mark('picks');

      // 4. ⚡ Train on the lens: the Python agent trains (smoke budget, built-in model) and the dashboard opens on the run.
      await gotoLine(page, SOLVE_LINE + 12);
      await lens.locator('a', { hasText: '⚡ Train' }).click();
      await pickItem(page, 'calc/data/train.jsonl', /Train solve: training data/);
      await pickItem(page, 'calc/data/val.jsonl', /validation data/);
      await pickItem(page, 'Smoke test', /budget/);
      await pickItem(page, 'builtin:0.8m', /model/);
      await page.locator('.notification-toast', { hasText: 'Agent Lightning: training solve' }).waitFor({ state: 'visible', timeout: 60_000 });
      const done = page.locator('.notification-toast', { hasText: /Agent Lightning: trained solve/ });
      const failed = page.locator('.notification-toast', { hasText: /Agent Lightning: training solve failed/ });
      const outcome = await Promise.race([
        done.waitFor({ state: 'visible', timeout: 8 * 60_000 }).then(() => done.innerText({ timeout: 2000 })),
        failed.waitFor({ state: 'visible', timeout: 8 * 60_000 }).then(async () => `FAILED ${await failed.innerText({ timeout: 2000 })}`),
      ]);
      assert.match(outcome, /2\/2 steps/, outcome);
      mark('python agent trained');
      await runCommand(page, 'Notifications: Clear All Notifications'); // the screenshots show the views, not the toasts
      const dashboard = await webviewWith(page, '.chart-card[data-chart="reward"] canvas', 60_000);
      assert.match(await dashboard.locator('.run-facts').innerText(), /samples\/calc-py\/calc_agent\.py:solve/);

      // 5. The theme switches: the open dashboard redraws its charts in the new theme's colours.
      const first = await themeOf(dashboard);
      const before = await axisPixels(dashboard, '--vscode-descriptionForeground');
      assert.ok(before.pixels > 30, `the axes are drawn in the ${first} theme's ${before.color}: ${before.pixels} px`);
      await shot(`04-dashboard-${first}`);
      await runCommand(page, 'Preferences: Toggle between Light/Dark Themes');
      const second = first === 'light' ? 'dark' : 'light';
      await dashboard.locator(`body.vscode-${second}`).waitFor({ state: 'attached', timeout: 30_000 });
      const deadline = Date.now() + 30_000;
      let after = await axisPixels(dashboard, '--vscode-descriptionForeground');
      while (after.pixels <= 30) {
        assert.ok(Date.now() < deadline, `the charts were not redrawn in the ${second} theme's ${after.color}`);
        await page.waitForTimeout(200);
        after = await axisPixels(dashboard, '--vscode-descriptionForeground');
      }
      assert.notEqual(after.color, before.color);
      assert.ok((await axisPixels(dashboard, '', before.color)).pixels < 5, `no ${first} theme colour left on the axes`);
      await shot(`05-dashboard-${second}`);
      mark('theme switched');

      // 6. A Train that ran marks its agent as last used.
      await page.locator('.tab', { hasText: 'calc_agent.py' }).first().click();
      await gotoLine(page, 1);
      await runCommand(page, 'Agent Lightning: Train This Agent');
      await page.locator('.quick-input-widget .quick-input-title', { hasText: /which agent to train/ }).waitFor({ state: 'visible', timeout: 30_000 });
      assert.match((await pickRows(page))[0] ?? '', /^solve\s*samples\/calc-py\/calc_agent\.py:solve · last used/);
      await cancelPick(page);

      // 7. The trajectory viewer by keyboard: the focused row is outlined in the theme's focus colour, in both themes.
      await runCommand(page, 'Agent Lightning: Open Trajectory Viewer');
      const viewer = webview(page);
      await viewer.locator('.rollout-row').first().waitFor({ state: 'visible', timeout: 60_000 });
      for (const theme of [second, first]) {
        if (theme === first) {
          await runCommand(page, 'Preferences: Toggle between Light/Dark Themes');
          await viewer.locator(`body.vscode-${theme}`).waitFor({ state: 'attached', timeout: 30_000 });
        }
        await viewer.locator('vscode-textfield[data-filter="search"] input').focus();
        await page.keyboard.press('ArrowDown');
        const outline = await viewer.locator('.rollout-row:focus').evaluate((row) => {
          const s = getComputedStyle(row);
          const probe = document.createElement('span');
          probe.style.color =
            getComputedStyle(document.body).getPropertyValue('--vscode-list-focusOutline').trim() ||
            getComputedStyle(document.body).getPropertyValue('--vscode-focusBorder').trim();
          document.body.append(probe);
          const want = getComputedStyle(probe).color;
          probe.remove();
          return { style: s.outlineStyle, color: s.outlineColor, want };
        });
        assert.equal(outline.style, 'solid', `${theme}: the focused row has an outline`);
        assert.equal(outline.color, outline.want, `${theme}: in the theme's focus colour`);
        await shot(`06-viewer-focused-row-${theme}`);
      }
      mark('viewer keyboard');
    });
  },
);
