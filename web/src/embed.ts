// Entry of embed.html, kept tiny: start the engine worker first, then load the view.
import './style.css';
import './early';

void import('./embed-ui');
