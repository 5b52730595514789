/**
 * `agl lsp [--stdio]`: the language server for editors (CodeLens with reward stats above agent
 * functions). Speaks LSP over stdin/stdout; logs go to stderr, since stdout carries the protocol.
 * The VS Code extension starts it with vscode-languageclient; any LSP client can.
 */
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { LSP_COMMAND } from '../../protocol/cli-commands.js';
import { startLspServer } from '../lsp/server.js';
import { parseCommand } from './flags.js';

export async function run(argv: string[]): Promise<number> {
  // Flags the client passes (--stdio, --clientProcessId=N) are declared; any other is refused before LSP starts.
  const parsed = parseCommand(LSP_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
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
