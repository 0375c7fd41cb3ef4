/**
 * @module Services: each tool service with its queues, config params, delivery, source, live
 * instances and the tools that use it (`GET /api/v1/services`, every 5 s).
 */
import { Badge, ErrorNotice, PageHeader } from '../components/notice.js';
import { ago } from '../format.js';
import { useNow, useResource, useTitle } from '../hooks.js';
import type { ServiceInfo } from '../types.js';

/** The services page. */
export function ServicesPage() {
  useTitle('Services');
  const services = useResource<{ services: ServiceInfo[] }>('/api/v1/services', 5000);
  const now = useNow();
  const list = services.data?.services;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Services" />
      <ErrorNotice error={services.error} prefix="Could not load the services" />
      {!list && !services.error && <p class="muted">Loading…</p>}
      {list && list.length === 0 && <p class="muted">No tool services are declared or announced.</p>}
      {list?.map((service) => (
        <article class="card service" key={service.id} aria-labelledby={`service-${service.id}`}>
          <h2 id={`service-${service.id}`}>
            {service.id} <Badge>{service.source}</Badge>{' '}
            {service.delivery && <Badge>{service.delivery}</Badge>}
            {!service.requestQueue && <Badge kind="error">descriptor does not parse</Badge>}
          </h2>
          <dl class="pairs">
            <dt>Request queue</dt>
            <dd>{service.requestQueue ? <code>{service.requestQueue}</code> : '—'}</dd>
            <dt>Response queue</dt>
            <dd>{service.responseQueue ? <code>{service.responseQueue}</code> : '—'}</dd>
            <dt>Config params</dt>
            <dd>
              {!service.configParams || service.configParams.length === 0
                ? 'none'
                : service.configParams.map((p, i) => (
                    <span key={p.name}>
                      {i > 0 && ', '}
                      <code>{p.name}</code>
                      {p.required ? ' (required)' : ''}
                    </span>
                  ))}
            </dd>
            <dt>Tools</dt>
            <dd>
              {service.tools.length === 0
                ? 'none'
                : service.tools.map((tool, i) => (
                    <span key={tool}>
                      {i > 0 && ', '}
                      <a href={`#/tools/${encodeURIComponent(tool)}`}>{tool}</a>
                    </span>
                  ))}
            </dd>
          </dl>
          {!service.requestQueue && (
            <p class="muted">
              See the problems of{' '}
              <a href={`#/config/tool-service/${encodeURIComponent(service.id)}`}>its config item</a> on the
              overview.
            </p>
          )}
          <h3>
            Instances{' '}
            <Badge
              kind={
                service.instances.length > 0 ? 'ok' : service.source === 'announced' ? 'error' : undefined
              }
            >
              {service.instances.length}
            </Badge>
          </h3>
          {service.instances.length === 0 ? (
            <p class="muted">
              {service.source === 'announced'
                ? 'No instance is live.'
                : 'None has announced itself (instances of a service declared in config are known once they announce).'}
            </p>
          ) : (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Instance</th>
                  <th scope="col">Last seen</th>
                </tr>
              </thead>
              <tbody>
                {service.instances.map((instance) => (
                  <tr key={instance.id}>
                    <td>
                      <code>{instance.id}</code>
                    </td>
                    <td>
                      <time dateTime={new Date(instance.lastSeen).toISOString()}>
                        {ago(instance.lastSeen, now)}
                      </time>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </article>
      ))}
    </section>
  );
}
