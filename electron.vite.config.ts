import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import react from '@vitejs/plugin-react'
import { contentSecurityPolicy } from './src/main/csp'

export default defineConfig({
  main: {
    // index: the Electron shell; cli: `syncscope` (bin/syncscope.js runs out/main/cli.js), the same code without Electron
    build: {
      rollupOptions: {
        input: { index: resolve(__dirname, 'src/main/index.ts'), cli: resolve(__dirname, 'src/main/cli.ts') }
      }
    }
  },
  preload: {
    build: {
      rollupOptions: { input: { index: resolve(__dirname, 'src/preload/index.ts') }, output: { format: 'cjs' } }
    }
  },
  renderer: {
    root: resolve(__dirname, 'src/renderer'),
    build: { minify: true, rollupOptions: { input: resolve(__dirname, 'src/renderer/index.html') } },
    plugins: [
      react(),
      // the page's <meta> policy is the same one main sends with its responses (src/main/csp.ts)
      {
        name: 'syncscope-csp',
        transformIndexHtml: (html: string) => html.replace('%SYNCSCOPE_CSP%', contentSecurityPolicy('meta'))
      }
    ]
  }
})
