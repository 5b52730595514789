/** A one-line progress bar on stderr (redrawn in place on a terminal, one line per update elsewhere, throttled). */
export class Progress {
  private lastDraw = 0;
  private readonly tty = Boolean(process.stderr.isTTY);
  private readonly started = Date.now();

  constructor(
    private readonly label: string,
    private total: number,
  ) {}

  setTotal(total: number): void {
    this.total = total;
  }

  update(done: number, note = ''): void {
    const now = Date.now();
    if (!this.tty && now - this.lastDraw < 10_000 && done < this.total) return;
    if (this.tty && now - this.lastDraw < 100 && done < this.total) return;
    this.lastDraw = now;
    const width = 24,
      frac = this.total > 0 ? Math.min(1, done / this.total) : 0;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '-');
    const secs = (now - this.started) / 1000;
    const eta = done > 0 && done < this.total ? ` eta ${fmt((secs / done) * (this.total - done))}` : '';
    const line = `${this.label} [${bar}] ${done}/${this.total} ${fmt(secs)}${eta} ${note}`;
    process.stderr.write(this.tty ? `\r\x1b[K${line}` : `${line}\n`);
  }

  /** Prints a message above the bar. */
  log(message: string): void {
    process.stderr.write(this.tty ? `\r\x1b[K${message}\n` : `${message}\n`);
    this.lastDraw = 0;
  }

  done(): void {
    if (this.tty) process.stderr.write('\n');
  }
}

function fmt(s: number): string {
  const m = Math.floor(s / 60),
    r = Math.round(s % 60);
  return m > 0 ? `${m}m${String(r).padStart(2, '0')}s` : `${r}s`;
}
