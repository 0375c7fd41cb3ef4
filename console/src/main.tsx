/**
 * @module The console's entry: applies the theme, then renders the app into `#app`.
 */
import { render } from 'preact';
import { App } from './app.js';
import { startTheme } from './theme.js';
import './console.css';

startTheme();
const root = document.getElementById('app');
if (root) render(<App />, root);
