// Small element builders shared by the page's views.

/** A `tag` element with `props` assigned and `kids` appended. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...kids: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const n = Object.assign(document.createElement(tag), props);
  n.append(...kids);
  return n;
}

/** A `tag` element with HTML `attrs` set (names as in markup: `class`, `for`, `aria-*`) and text. */
export function elAttrs<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The page's element for a selector: the markup has it, so a missing one is a bug and throws. */
export function element<T extends HTMLElement = HTMLElement>(selector: string): T {
  const found = document.querySelector<T>(selector);
  if (!found) throw new Error(`the page has no ${selector}`);
  return found;
}

/** A button a message offers, next to its text (the fix for what it says). */
export interface MessageAction {
  id: string;
  label: string;
  run: () => void;
}

/** Shows a message line (hidden when `text` is null), with a button if it offers one. */
export function showMessage(node: HTMLElement, text: string | null, kind: 'error' | 'info' = 'error', action?: MessageAction): void {
  node.hidden = !text;
  node.dataset.kind = kind;
  node.textContent = text ?? '';
  if (text && action) {
    const b = el('button', { type: 'button', id: action.id, textContent: action.label });
    b.addEventListener('click', action.run);
    node.append(' ', b);
  }
}
