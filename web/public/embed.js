/*! servesim embed.js: sizes servesim embeds to their content. Add it once to a page that
 * has servesim iframes:  <script src="https://HOST/PATH/embed.js" async></script>
 * Each embed posts {type: "servesim:resize", height} when its content height changes; this
 * sets that iframe's height. Without this script an iframe keeps the size its snippet gives. */
(() => {
  if (window.__servesimEmbedJs) return;
  window.__servesimEmbedJs = true;
  /** Heights outside this range are ignored (a frame cannot take over the page). */
  const MIN = 40;
  const MAX = 10000;

  function frameOf(source, origin) {
    for (const frame of document.getElementsByTagName('iframe')) {
      if (frame.contentWindow !== source) continue;
      // Only the page the iframe was given may size it (not one it navigated to).
      try {
        return new URL(frame.src, location.href).origin === origin ? frame : null;
      } catch {
        return null;
      }
    }
    return null;
  }

  window.addEventListener('message', (event) => {
    const data = event.data;
    if (data === null || typeof data !== 'object' || data.type !== 'servesim:resize') return;
    const height = Number(data.height);
    if (!Number.isFinite(height) || height < MIN || height > MAX) return;
    const frame = frameOf(event.source, event.origin);
    if (!frame) return;
    frame.style.height = `${Math.ceil(height)}px`;
    frame.dataset.servesimHeight = String(Math.ceil(height));
  });
})();
