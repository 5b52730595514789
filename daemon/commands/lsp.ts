/**
 * `agl lsp [--stdio]`: the language server for editors (CodeLens with reward stats above agent
 * functions). Speaks LSP over stdin/stdout; logs go to stderr, since stdout carries the protocol.
 * The VS Code extension starts it with vscode-languageclient; any LSP client can.
 */
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { startLspServer } from '../lsp/server.js';

export const summary = 'language server (stdio) serving CodeLens with reward stats above agent functions';

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stderr.write(
      'usage: agl lsp [--stdio]\n  Language server over stdin/stdout. The daemon endpoint comes from the client (initializationOptions.daemon).\n',
    );
    return 0;
  }
  const unknown = argv.filter((a) => a !== '--stdio' && !a.startsWith('--clientProcessId'));
  if (unknown.length > 0) {
    process.stderr.write(`agl lsp: unknown argument ${unknown[0]} (only --stdio is supported)\n`);
    return 2;
  }
  // Anything printed to stdout would corrupt the protocol stream.
  console.log = (...args: unknown[]) => console.error(...args);
  console.info = console.log;
  const connection = createConnection(ProposedFeatures.all, process.stdin, process.stdout);
  startLspServer(connection);
  return new Promise<number>((resolve) => {
    connection.onExit(() => resolve(0));
    process.stdin.on('end', () => resolve(0));
  });
}
