/**
 * The one panel of a kind a window holds (the trajectory viewer, the training dashboard, the optimization and compare
 * views): opening reveals the open one on the newest client, else makes it; a panel VS Code restores after a reload
 * replaces the open one; a disposed panel is forgotten (its make calls `forget` from its onDispose).
 */
import type * as vscode from 'vscode';
import type { ClientSource } from './client-source.js';
import type { PanelHost } from './panel-host.js';

/** What every kind of panel holds: its host, and the client its handlers read through (swapped on each open). */
export interface OpenPanel {
  host: PanelHost;
  client: ClientSource;
}

/** What a kind's make is given: the client, where its links lead, a restored panel to adopt or a column to open in. */
export interface MakeArgs<P, L> {
  context: vscode.ExtensionContext;
  client: ClientSource;
  links: L;
  existing?: vscode.WebviewPanel;
  column?: vscode.ViewColumn;
  /** Call from the panel's onDispose. */
  forget: (panel: P) => void;
}

export class OnePanel<P extends OpenPanel, L> {
  private current: P | undefined;

  constructor(private readonly make: (args: MakeArgs<P, L>) => P) {}

  /** The open panel, revealed and reading through `client`; else a new one in `column`. */
  open(context: vscode.ExtensionContext, client: ClientSource, links: L, column?: vscode.ViewColumn): P {
    if (!this.current) return this.made({ context, client, links, column });
    this.current.client = client;
    this.current.host.reveal();
    return this.current;
  }

  /** Restores the kind's panel after a reload (registered once in activate()), in place of an open one. */
  serializer(context: vscode.ExtensionContext, client: ClientSource, links: L): vscode.WebviewPanelSerializer {
    return {
      deserializeWebviewPanel: async (existing: vscode.WebviewPanel) => {
        this.current?.host.panel.dispose();
        this.made({ context, client, links, existing });
      },
    };
  }

  private made(args: Omit<MakeArgs<P, L>, 'forget'>): P {
    const panel = this.make({
      ...args,
      forget: (gone) => {
        if (this.current === gone) this.current = undefined;
      },
    });
    this.current = panel;
    return panel;
  }
}
