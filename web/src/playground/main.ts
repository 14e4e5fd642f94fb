// Entry of index.html, kept tiny: start the engine worker (and its wasm download) first, then
// load the page's UI (form, charts) while the engine gets ready.
import '../ui/style.css';
import '../engine/early';

void import('./controller');
// The Embed builder loads on its first use.
document.getElementById('embed')?.addEventListener('click', () => void import('../embed/builder').then((m) => m.openEmbedBuilder()));
