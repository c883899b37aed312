import { useEffect, useState } from 'react'
import { useEventsIntoCache } from './hooks'
import { pages } from './pages'

function pageFromHash(): string {
  const id = window.location.hash.replace(/^#\/?/, '')
  return pages.some((page) => page.id === id) ? id : (pages[0]?.id ?? '')
}

export function App() {
  useEventsIntoCache()
  const [current, setCurrent] = useState(pageFromHash)
  useEffect(() => {
    const onHash = () => setCurrent(pageFromHash())
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [])
  const page = pages.find((candidate) => candidate.id === current)
  return (
    <div className="app">
      <nav className="sidebar" aria-label="Main">
        <div className="brand">Syncscope</div>
        {pages.map((candidate) => (
          <a
            key={candidate.id}
            href={`#/${candidate.id}`}
            className={candidate.id === current ? 'active' : ''}
            aria-current={candidate.id === current ? 'page' : undefined}
          >
            {candidate.title}
          </a>
        ))}
      </nav>
      <main className="content">{page && <page.Component />}</main>
    </div>
  )
}
