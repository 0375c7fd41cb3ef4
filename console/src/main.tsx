/**
 * @module The console's entry: applies the theme, then renders the app into `#app`.
 */
import { render } from 'preact';
import { App } from './app.js';
import { applyTheme, storedTheme } from './theme.js';
import './console.css';

applyTheme(storedTheme());
const root = document.getElementById('app');
if (root) render(<App />, root);
