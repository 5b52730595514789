/**
 * End-to-end in real VS Code (code-server + chromium + playwright-core): packages the extension
 * (`npm run package`), installs the .vsix, opens the samples folder, and checks what a user sees: the
 * status bar reaching "ready" (the extension started the bundled daemon), the CodeLens above the calc
 * agent, "Agent Lightning: Train This Agent" from the command palette with a smoke-test budget, its
 * progress, and the trajectory viewer's content. Screenshots go to test-results/e2e/.
 * `npm test` installs code-server and finds or unpacks chromium first; without them it fails saying so.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { AglClient } from '../../client/client.js';
import { openFile, pickItem, ROOT, runCommand, webview, inWorkbench } from './harness.js';

const samples = join(ROOT, 'samples');

test(
  'VS Code: daemon starts, CodeLens shows, Train This Agent runs with progress, trajectory viewer shows the rollouts',
  { timeout: 15 * 60_000 },
  async () => {
    // Port 0: other daemons on this machine may hold the default port; the data dir is the scratch one.
    await inWorkbench(
      { shots: 'vscode', folder: samples, settings: { 'agentLightning.groupSize': 2 }, readyTimeout: null },
      async ({ server, page, shot, mark }) => {
        await page.locator('.explorer-folders-view .monaco-list-row').first().waitFor({ state: 'visible', timeout: 60_000 });
        mark('workbench');

        // 1. The extension activates, starts the bundled daemon, and says so in the status bar.
        await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 90_000 });
        mark('daemon ready');

        // 2. The CodeLens above the calc agent: reward summary and the actions.
        await openFile(page, 'calc/agent.ts');
        const lens = page.locator('.monaco-editor .codelens-decoration').first();
        await lens.waitFor({ state: 'visible', timeout: 60_000 });
        await page.locator('.monaco-editor .codelens-decoration', { hasText: '⚡ Train' }).first().waitFor({ state: 'visible', timeout: 30_000 });
        const lensText = await lens.innerText();
        assert.match(lensText, /no rollouts yet|reward/, `CodeLens: ${lensText}`);
        assert.match(lensText, /▶ Run/);
        mark('codelens');
        await shot('01-codelens');

        // 3. Train This Agent from the command palette, cursor inside the agent: training data, validation
        //    data, budget and model through quick picks, then a cancellable progress notification.
        await page.locator('.monaco-editor .view-line', { hasText: 'const openai = new OpenAI' }).click();
        await runCommand(page, 'Agent Lightning: Train This Agent');
        await pickItem(page, 'calc/data/train.jsonl', /training data/);
        await pickItem(page, 'calc/data/val.jsonl', /validation data/);
        // Sensible defaults from the agent's folder: its train.yaml comes first among the budgets, its shipped
        // SFT warm-up among the models (the e2e still takes the smoke budget and the built-in model: fast).
        const pickRows = () => page!.locator('.quick-input-list .monaco-list-row').allInnerTexts();
        await page.locator('.quick-input-widget .quick-input-title', { hasText: /budget/ }).waitFor({ state: 'visible', timeout: 30_000 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Smoke test' }).first().waitFor({ state: 'visible' });
        assert.match((await pickRows())[0] ?? '', /The agent's train\.yaml/, `budgets: ${(await pickRows()).join(' | ')}`);
        await pickItem(page, 'Smoke test', /budget/);
        await page.locator('.quick-input-widget .quick-input-title', { hasText: /model/ }).waitFor({ state: 'visible', timeout: 30_000 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: 'builtin:0.8m' }).first().waitFor({ state: 'visible' });
        assert.ok(
          (await pickRows()).some((r) => /calc\/warmup/.test(r)),
          `models: ${(await pickRows()).join(' | ')}`,
        );
        await pickItem(page, 'builtin:0.8m', /model/);
        const toast = page.locator('.notification-toast', { hasText: 'Agent Lightning: training calcAgent' });
        await toast.waitFor({ state: 'visible', timeout: 60_000 });
        mark('training started');
        // Progress from the store: the status bar counts steps while the notification shows them.
        await page.locator('.statusbar-item', { hasText: /Agent Lightning: training \d+\/\d+/ }).waitFor({ state: 'visible', timeout: 180_000 });
        await toast.locator('.monaco-button', { hasText: 'Cancel' }).waitFor({ state: 'visible' }); // cancellable
        assert.match(await toast.innerText(), /step \d+\/\d+|starting/);
        await shot('02-training-progress');
        // The dashboard opens on the run.
        await page
          .locator('.tab', { hasText: /Training/ })
          .first()
          .waitFor({ state: 'visible', timeout: 60_000 });
        mark('training progress');

        const done = page.locator('.notification-toast', { hasText: /Agent Lightning: trained calcAgent/ });
        const failed = page.locator('.notification-toast', { hasText: /Agent Lightning: training calcAgent failed/ });
        // Read the outcome as soon as it shows (notifications hide after a while).
        const outcome = await Promise.race([
          done.waitFor({ state: 'visible', timeout: 10 * 60_000 }).then(() => done.innerText({ timeout: 2000 })),
          failed.waitFor({ state: 'visible', timeout: 10 * 60_000 }).then(async () => `FAILED ${await failed.innerText({ timeout: 2000 })}`),
        ]);
        await shot('03-trained');
        assert.ok(!outcome.startsWith('FAILED'), `training failed: ${outcome}`);
        const summary = outcome;
        assert.match(summary, /2\/2 steps/, summary);
        assert.match(summary, /held-out reward \d\.\d\d → \d\.\d\d/, summary);
        mark('trained');
        // Serve the trained checkpoint: the daemon restarts with it, so Run Rollout below uses the new policy.
        await done.locator('.monaco-button', { hasText: 'Serve Checkpoint' }).click();
        await page.locator('.notification-toast', { hasText: /now serves .*policy-2/ }).waitFor({ state: 'visible', timeout: 90_000 });
        await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 30_000 });
        mark('serving checkpoint');

        // 4. The CodeLens now has the reward of the rollouts training ran.
        await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
        await page
          .locator('.monaco-editor .codelens-decoration', { hasText: /reward -?\d\.\d\d.* · \d+ rollouts/ })
          .first()
          .waitFor({ state: 'visible', timeout: 60_000 });
        const trainedLens = await page.locator('.monaco-editor .codelens-decoration', { hasText: 'rollouts' }).first().innerText();
        const trained = Number(/· (\d+) rollouts/.exec(trainedLens)?.[1]);
        assert.ok(trained >= 8, `the lens counts the training rollouts: ${trainedLens}`);
        await shot('04-codelens-after-training');
        mark('codelens updated');

        // 5. The trajectory viewer lists the agent's rollouts; one of them opens with its spans.
        await runCommand(page, 'Agent Lightning: Open Trajectory Viewer');
        const viewer = webview(page);
        const rows = viewer.locator('.rollout-row');
        await rows.first().waitFor({ state: 'visible', timeout: 60_000 });
        assert.ok((await rows.count()) >= 4, `the viewer lists the training rollouts (saw ${await rows.count()})`);
        assert.match(await rows.first().innerText(), /(succeeded|failed)[\s\S]*How many/, 'a row shows the status and the task (its question, as text)');
        await shot('05-trajectory-viewer');
        await rows.first().click();
        await viewer.locator('.span-tree').waitFor({ state: 'visible', timeout: 30_000 });
        assert.match(await viewer.locator('.span-tree').innerText(), /gen_ai\.chat|chat/);
        await shot('06-rollout');
        mark('viewer');

        // 6. "▶ Run" on the CodeLens: a task picked from a JSONL line runs one rollout, and the viewer shows it.
        await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
        await page.locator('.monaco-editor .codelens-decoration a', { hasText: '▶ Run' }).first().click();
        await pickItem(page, 'Pick a task from a JSONL file', /which task/);
        await pickItem(page, 'calc/data/test.jsonl', /tasks file/);
        await pickItem(page, 'line 1', /which task/);
        await viewer.locator('.summary', { hasText: 'test-0' }).waitFor({ state: 'visible', timeout: 120_000 });
        assert.match(await viewer.locator('.summary').innerText(), /calc\/agent\.ts#calcAgent/);
        // The served checkpoint answered the agent's LLM calls: the rollout succeeded (whatever its reward).
        await viewer.locator('.view-header', { hasText: 'succeeded' }).waitFor({ state: 'visible', timeout: 30_000 });
        await shot('07-run-rollout');
        mark('run rollout');

        await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
        await page
          .locator('.monaco-editor .codelens-decoration', { hasText: `· ${trained + 1} rollouts` })
          .first()
          .waitFor({ state: 'visible', timeout: 30_000 });

        // 7. Lifecycle: Stop Daemon -> the status bar and lens say so; a command that needs it explains and offers to start it.
        await runCommand(page, 'Agent Lightning: Stop Daemon');
        await page.locator('.statusbar-item', { hasText: 'Agent Lightning: stopped' }).waitFor({ state: 'visible', timeout: 30_000 });
        await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
        await page.locator('.monaco-editor .codelens-decoration', { hasText: 'daemon not running' }).first().waitFor({ state: 'visible', timeout: 30_000 });
        await runCommand(page, 'Agent Lightning: Run Rollout');
        const explain = page.locator('.notification-toast', { hasText: 'cannot run a rollout: the daemon is not running (it was stopped)' });
        await explain.waitFor({ state: 'visible', timeout: 30_000 });
        await shot('08-daemon-stopped');
        await explain.locator('.monaco-button', { hasText: 'Start Daemon' }).click();
        await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 60_000 });
        await pickItem(page, 'test-0', /which task/); // the flow continues once the daemon is up: last task first
        // The rollout ends by opening the viewer on itself, over the agent's tab (the lens is drawn only when the agent's
        // editor shows): once the viewer shows that rollout, back to the agent.
        const client = AglClient.fromDataDir(server.dataDir);
        const deadline = Date.now() + 120_000;
        let newest: string | undefined;
        while (!newest) {
          assert.ok(Date.now() < deadline, 'the rollout run after the restart was never recorded');
          const got = await client.queryRollouts({ limit: 1, withTotal: true });
          if ((got.total ?? 0) >= trained + 2) newest = got.items[0]!.id;
          else await page.waitForTimeout(250);
        }
        await client.close();
        await viewer.locator('.view-header', { hasText: newest }).waitFor({ state: 'visible', timeout: 120_000 });
        await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
        await page
          .locator('.monaco-editor .codelens-decoration', { hasText: `· ${trained + 2} rollouts` })
          .first()
          .waitFor({ state: 'visible', timeout: 60_000 });
        mark('daemon restarted');

        // 8. Training is cancellable: the choices are remembered (last used first); Cancel stops `agl train`.
        await runCommand(page, 'Agent Lightning: Train This Agent');
        await pickItem(page, 'last used', /training data/);
        await pickItem(page, 'last used', /validation data/);
        await pickItem(page, 'last used', /budget/);
        await pickItem(page, 'last used', /model/);
        const again = page.locator('.notification-toast', { hasText: 'Agent Lightning: training calcAgent' });
        await again.locator('.monaco-button', { hasText: 'Cancel' }).click({ timeout: 60_000 });
        await page.locator('.notification-toast', { hasText: /training of calcAgent cancelled/ }).waitFor({ state: 'visible', timeout: 120_000 });
        await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 30_000 });
        await shot('09-training-cancelled');
        mark('training cancelled');
      },
    );
  },
);
