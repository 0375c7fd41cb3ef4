/** Stylesheets are imported for esbuild, which writes them to console.css. */
declare module '*.css';
