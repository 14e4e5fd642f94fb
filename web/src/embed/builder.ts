// The playground's "Embed" builder: a dialog that turns the scenario on screen into a snippet
// a docs author pastes. They choose the size, the panels, the theme and click-to-run; a live
// preview (the embed page itself, at the chosen width) measures the height the content
// needs, which becomes the iframe's default height, so the embed fits even on a page
// without embed.js. The snippet carries a `title` and a copy button copies it.

import './builder.css';
import { decodeLink } from '../scenario/link';
import { el } from '../ui/dom';
import { DEFAULT_OPTIONS, type EmbedOptions, embedUrl, estimateHeight, PANEL_IDS, PANELS, type Panel, scriptTag, snippet } from './options';
import { RESIZE_MESSAGE } from './resize';

const MIN_WIDTH = 280;
const MAX_WIDTH = 1600;

function labelled(text: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  const l = el('label', { className: 'eb-field' }, el('span', { textContent: text }), control);
  if (hint) l.append(el('small', { textContent: hint }));
  return l;
}

class EmbedBuilder {
  readonly dialog = el('dialog', { id: 'embed-dialog', className: 'embed-builder' });
  private width = el('input', { id: 'eb-width', type: 'number', min: String(MIN_WIDTH), max: String(MAX_WIDTH), step: '10', value: '720' });
  private height = el('input', { id: 'eb-height', type: 'number', min: '120', max: '4000', step: '10' });
  private title = el('input', { id: 'eb-title', type: 'text' });
  private theme = el(
    'select',
    { id: 'eb-theme' },
    el('option', { value: 'light', textContent: 'light' }),
    el('option', { value: 'dark', textContent: 'dark' }),
  );
  private clickToRun = el('input', { id: 'eb-click', type: 'checkbox' });
  private view = el(
    'select',
    { id: 'eb-view' },
    el('option', { value: 'results', textContent: 'Results (numbers, charts)' }),
    el('option', { value: 'inspector', textContent: 'Inspector (KV block map)' }),
  );
  private script = el('textarea', { id: 'eb-script', readOnly: true, rows: 1, spellcheck: false });
  private panelBoxes = el('fieldset', { className: 'eb-panels' }, el('legend', { textContent: 'Panels' }));
  private panels = new Map<Panel, HTMLInputElement>();
  private code = el('textarea', { id: 'eb-snippet', readOnly: true, rows: 4, spellcheck: false });
  private copyNote = el('span', { id: 'eb-copied', className: 'eb-note', role: 'status' });
  private preview = el('iframe', { id: 'eb-preview', title: 'Preview of the embed' });
  private measured: number | null = null;
  /** The author typed a height: keep it rather than the preview's. */
  private heightEdited = false;
  private hash = '';
  private previewTimer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    const panelBoxes = this.panelBoxes;
    for (const id of PANEL_IDS) {
      const box = el('input', { type: 'checkbox', value: id, id: `eb-panel-${id}`, checked: DEFAULT_OPTIONS.panels.includes(id) });
      this.panels.set(id, box);
      panelBoxes.append(el('label', {}, box, ` ${PANELS[id]}`));
    }
    const copy = el('button', { id: 'eb-copy', type: 'button', className: 'primary', textContent: 'Copy snippet' });
    const copyScript = el('button', { id: 'eb-copy-script', type: 'button', textContent: 'Copy script' });
    const close = el('button', { id: 'eb-close', type: 'button', textContent: 'Close' });
    this.dialog.append(
      el('h2', { textContent: 'Embed this scenario' }),
      el('p', {
        className: 'eb-note',
        textContent: 'Paste the snippet into any HTML page. The script sizes the frame to its content; without it the frame keeps the height below.',
      }),
      el(
        'div',
        { className: 'eb-grid' },
        el(
          'div',
          { className: 'eb-controls' },
          labelled('Show', this.view, 'the inspector opens at the moment the playground shows'),
          labelled('Width (px)', this.width),
          labelled('Height (px)', this.height, 'measured from the preview'),
          labelled('Title', this.title, 'read by screen readers'),
          labelled('Theme', this.theme),
          el('label', { className: 'eb-check' }, this.clickToRun, ' Click to run (for heavy scenarios)'),
          panelBoxes,
        ),
        el('div', { className: 'eb-preview' }, this.preview),
      ),
      el('label', { className: 'eb-code' }, el('span', { textContent: 'Snippet (one per embed)' }), this.code),
      el('label', { className: 'eb-code' }, el('span', { textContent: 'Once per page, for any number of embeds: the script that sizes them' }), this.script),
      el('div', { className: 'eb-actions' }, copy, copyScript, this.copyNote, close),
    );
    document.body.append(this.dialog);

    for (const input of [this.view, this.width, this.title, this.theme, this.clickToRun, ...this.panels.values()]) {
      input.addEventListener('input', () => this.changed(input !== this.title));
    }
    this.height.addEventListener('input', () => {
      this.heightEdited = true;
      this.update();
    });
    copy.addEventListener('click', () => void this.copy(this.code));
    copyScript.addEventListener('click', () => void this.copy(this.script));
    close.addEventListener('click', () => this.dialog.close());
    this.dialog.addEventListener('close', () => {
      // The preview runs an engine of its own: stop it when the dialog goes.
      this.preview.src = 'about:blank';
    });
    window.addEventListener('message', (ev) => {
      if (ev.source !== this.preview.contentWindow || ev.data?.type !== RESIZE_MESSAGE) return;
      const h = Number(ev.data.height);
      if (!Number.isFinite(h) || h <= 0) return;
      this.preview.style.height = `${Math.ceil(h)}px`;
      // Only the height with the results drawn is the embed's (before, panels are still empty).
      if (ev.data.ready !== true) return;
      this.measured = Math.ceil(h);
      this.update();
    });
  }

  private options(): EmbedOptions {
    const panels = PANEL_IDS.filter((p) => this.panels.get(p)?.checked);
    const o: EmbedOptions = {
      panels: panels.length ? panels : DEFAULT_OPTIONS.panels,
      theme: this.theme.value === 'dark' ? 'dark' : 'light',
      clickToRun: this.clickToRun.checked,
    };
    // The playground's own moment (`?inspect=`, written while the inspector is open) travels.
    if (this.view.value === 'inspector') o.inspect = new URLSearchParams(location.search).get('inspect') ?? '';
    return o;
  }

  private widthPx(): number {
    const w = Math.round(Number(this.width.value));
    return Number.isFinite(w) ? Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, w)) : 720;
  }

  async open(): Promise<void> {
    this.hash = location.hash;
    // Opened while the inspector shows a moment: offer that view first.
    if (new URLSearchParams(location.search).has('inspect')) this.view.value = 'inspector';
    let name = '';
    try {
      const partial = await decodeLink(this.hash);
      if (typeof partial?.name === 'string') name = partial.name;
    } catch {
      // The playground only publishes links it made; a bad one embeds as it is.
    }
    this.title.value = `servesim simulation${name ? `: ${name}` : ''}`;
    this.heightEdited = false;
    this.changed(true);
    this.dialog.showModal();
  }

  /** Options changed: the preview reloads (and is measured again). */
  private changed(reload: boolean): void {
    if (reload) {
      this.measured = null;
      clearTimeout(this.previewTimer);
      this.previewTimer = setTimeout(() => {
        this.preview.style.width = `${this.widthPx()}px`;
        this.preview.src = this.url();
      }, 250);
    }
    this.update();
  }

  private url(): string {
    return embedUrl(location.href, this.hash, this.options());
  }

  private update(): void {
    const width = this.widthPx();
    const o = this.options();
    if (!this.heightEdited) this.height.value = String(this.measured ?? estimateHeight(o, width));
    const height = Math.max(120, Math.round(Number(this.height.value)) || estimateHeight(o, width));
    this.code.value = snippet({ url: this.url(), title: this.title.value || 'servesim simulation', width, height });
    this.script.value = scriptTag(new URL('embed.js', location.href).href);
    this.dialog.dataset.measured = String(this.measured !== null);
    (this.height.parentElement?.querySelector('small') as HTMLElement | null)?.replaceChildren(
      this.measured === null ? 'measuring the preview…' : 'measured from the preview',
    );
    const inspector = o.inspect !== undefined;
    this.panelBoxes.disabled = inspector;
    this.clickToRun.disabled = inspector;
  }

  private async copy(box: HTMLTextAreaElement): Promise<void> {
    try {
      await navigator.clipboard.writeText(box.value);
      this.copyNote.textContent = 'Copied to the clipboard.';
    } catch {
      box.select();
      this.copyNote.textContent = 'Press Ctrl+C (⌘C) to copy the selected snippet.';
    }
  }
}

let builder: EmbedBuilder | null = null;

/** Opens the builder for the scenario on screen (its link is the page's hash). */
export function openEmbedBuilder(): void {
  builder ??= new EmbedBuilder();
  void builder.open();
}
