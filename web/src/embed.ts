// Entry of embed.html, kept tiny: start the engine worker first, then load the view.
import './style.css';
import './early';

// `?inspect=…` shows just the inspector (a live block map for a docs page).
if (new URLSearchParams(location.search).has('inspect')) void import('./inspector-embed');
else void import('./embed-ui');
