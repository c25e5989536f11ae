// Builds this page with Vite for `create_app(public_dir=OUT)`, which serves it at /public/.
//   node tests/server/protocols/ui/build.mjs OUT
// Vite, React and the AI SDK come from tests/node_modules (tests/package.json, `make
// node-clients`). No config file: the options are here, so nothing is written beside the source.
import { fileURLToPath } from "node:url";
import { build } from "vite";

const [outDir] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node build.mjs OUT_DIR");
  process.exit(2);
}

await build({
  configFile: false,
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/public/",
  logLevel: "warn",
  esbuild: { jsx: "automatic" }, // JSX without @vitejs/plugin-react (whose current major needs Vite 8)
  build: {
    outDir,
    emptyOutDir: true,
    reportCompressedSize: false,
    rollupOptions: { onwarn: warnUnlessKnown },
  },
});

/** Rollup's notes on the dependencies' own files ("use client", comment positions) are noise. */
function warnUnlessKnown(warning, warn) {
  if (warning.code === "MODULE_LEVEL_DIRECTIVE" || warning.code === "INVALID_ANNOTATION") return;
  warn(warning);
}
