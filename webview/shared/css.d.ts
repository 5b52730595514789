// CSS files imported for esbuild, which emits them beside the bundle (dist/webview/<name>.css).
declare module '*.css';
