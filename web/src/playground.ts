// Entry of index.html, kept tiny: start the engine worker (and its wasm download) first, then
// load the page's UI (form, charts) while the engine gets ready.
import './style.css';
import './early';

void import('./playground-ui');
// The Embed builder loads on its first use.
document.getElementById('embed')?.addEventListener('click', () => void import('./embed-builder').then((m) => m.openEmbedBuilder()));
