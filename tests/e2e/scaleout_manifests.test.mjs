// Scale-out, offline tier: the deployment files of tools/deploy checked without a cluster.
// The router configuration comes from one template (tools/deploy/haproxy/mcp-router.cfg.in):
// HAProxy must accept every rendering of it, and the committed Kubernetes copy must be a fresh
// render. The kustomize base renders (`kubectl kustomize`, no server needed), every object
// validates against the Kubernetes OpenAPI schemas (npm kubernetes-models, pinned), and the
// facts the schemas cannot see hold: the pieces name each other, the replica id comes from the
// pod, the grace period covers the drain, probes and selectors agree. Skips, saying why, when
// haproxy or kubectl is missing.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { parseAllDocuments } from 'yaml';

import { RENDER } from './lib/cluster.mjs';
import { ROOT } from './lib/harness.mjs';

const DEPLOY = path.join(ROOT, 'tools/deploy');
const K8S = path.join(DEPLOY, 'kubernetes');
// The arguments kustomization.yaml documents for rendering haproxy.cfg.
const K8S_RENDER_ARGS = ['--statefulset', 'mcp-sandbox', '--service', 'mcp-sandbox', '--namespace', 'mcp-sandbox', '--replicas', '16'];

function has(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function render(args) {
  return execFileSync(RENDER, args, { encoding: 'utf8' });
}

// `haproxy -c` on a configuration text, which must pass without a warning (a warning is a
// keyword HAProxy reads otherwise than the template means).
function haproxyCheckClean(config) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-haproxy-'));
  try {
    const file = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(file, config);
    let output;
    try {
      output = execFileSync('sh', ['-c', 'haproxy -c -f "$1" 2>&1', 'sh', file], { encoding: 'utf8' });
    } catch (error) {
      throw new Error(`haproxy -c failed:\n${error.stdout}`);
    }
    assert.match(output, /Configuration file is valid/);
    assert.doesNotMatch(output, /WARNING|ALERT/, output);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const LOCAL_ARGS = ['--bind', '127.0.0.1:9000', '--admin-socket', '/tmp/mcp-router-test.sock',
  '--server', 'r1=198.18.0.2:8080', '--server', 'r2=198.18.0.6:8080', '--server', 'r3=198.18.0.10:8080'];

describe('scale-out deployment files, offline', () => {
  const noHaproxy = has('haproxy') ? false : 'haproxy is not installed (apt-get install haproxy)';
  const noKubectl = has('kubectl') ? false : 'kubectl is not installed (apt-get install kubernetes-client)';

  test('the router template renders for local servers and for a StatefulSet; HAProxy accepts both without a warning', { skip: noHaproxy }, () => {
    haproxyCheckClean(render(LOCAL_ARGS));
    haproxyCheckClean(render(K8S_RENDER_ARGS));
  });

  test('render.sh refuses what is not a replica id', () => {
    assert.throws(() => execFileSync(RENDER, ['--server', 'R_1=1.2.3.4:80'], { stdio: 'ignore' }));
    assert.throws(() => execFileSync(RENDER, ['--server', 'r1'], { stdio: 'ignore' }));
    assert.throws(() => execFileSync(RENDER, [], { stdio: 'ignore' }));
  });

  test('render.sh takes a replica id up to a DNS label\'s 63 characters (a StatefulSet pod\'s name)', () => {
    const longest = `mcp-sandbox-${'x'.repeat(48)}-12`;
    assert.equal(longest.length, 63);
    assert.match(render(['--server', `${longest}=1.2.3.4:80`]), new RegExp(`^    server ${longest} 1\\.2\\.3\\.4:80 check$`, 'm'));
    assert.throws(() => execFileSync(RENDER, ['--server', `${longest}x=1.2.3.4:80`], { stdio: 'ignore' }));
    assert.throws(() => execFileSync(RENDER, ['--server', 'r1-=1.2.3.4:80'], { stdio: 'ignore' }));
  });

  test('the two renderings differ only in the bind address, the admin socket, the servers and the resolvers', () => {
    // Per replica: its server line, its readiness mirror (backend ready-<id>) and its issuer rule.
    const strip = (text) => {
      let inMirror = false;
      return text.split('\n').filter((line) => {
        if (/^backend ready-/.test(line)) inMirror = true;
        else if (/^\S/.test(line) || line === '') inMirror = false;
        return !inMirror && !/^\s*(bind |stats socket |server |resolvers |parse-resolv-conf|accepted_payload_size|hold |http-request set-var\(txn\.replica\) str\()/.test(line);
      });
    };
    assert.deepEqual(strip(render(LOCAL_ARGS)), strip(render(K8S_RENDER_ARGS)));
  });

  test('the committed Kubernetes haproxy.cfg is a fresh render of the template', () => {
    const committed = fs.readFileSync(path.join(K8S, 'haproxy.cfg'), 'utf8');
    assert.equal(committed, render(K8S_RENDER_ARGS),
      `tools/deploy/kubernetes/haproxy.cfg is stale: tools/deploy/haproxy/render.sh ${K8S_RENDER_ARGS.join(' ')} > tools/deploy/kubernetes/haproxy.cfg`);
  });

  describe('the kustomize base', { skip: noKubectl }, () => {
    let objects = [];
    const find = (kind, name) => {
      const found = objects.find((object) => object.kind === kind && (!name || object.metadata.name === name));
      assert.ok(found, `no ${kind} ${name ?? ''}`);
      return found;
    };

    test('kubectl kustomize renders it offline', () => {
      const output = execFileSync('kubectl', ['kustomize', K8S], {
        encoding: 'utf8', env: { ...process.env, KUBECONFIG: '/dev/null' }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      objects = parseAllDocuments(output).map((doc) => {
        assert.equal(doc.errors.length, 0, doc.errors.join('\n'));
        return doc.toJS();
      });
      assert.deepEqual(objects.map((object) => object.kind).sort(),
        ['ConfigMap', 'Deployment', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet']);
    });

    test('every object validates against the Kubernetes schemas (kubernetes-models)', async () => {
      assert.ok(objects.length > 0);
      for (const object of objects) {
        const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [null, object.apiVersion];
        const module = await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`);
        const Model = module[object.kind];
        assert.ok(Model, `no model for ${object.apiVersion} ${object.kind}`);
        assert.doesNotThrow(() => new Model(object).validate(), `${object.kind} ${object.metadata.name}`);
      }
    });

    test('no unknown keys where a typo would pass the schemas (containers, pod specs, probes)', () => {
      const allowed = {
        container: ['name', 'image', 'args', 'command', 'ports', 'env', 'securityContext', 'resources', 'startupProbe',
          'readinessProbe', 'livenessProbe', 'volumeMounts', 'lifecycle'],
        pod: ['terminationGracePeriodSeconds', 'enableServiceLinks', 'automountServiceAccountToken', 'affinity',
          'containers', 'volumes', 'securityContext'],
        probe: ['httpGet', 'periodSeconds', 'failureThreshold', 'timeoutSeconds'],
      };
      const check = (what, value) => {
        for (const key of Object.keys(value)) assert.ok(allowed[what].includes(key), `unexpected ${what} key ${key}`);
      };
      for (const kind of ['StatefulSet', 'Deployment']) {
        const pod = find(kind).spec.template.spec;
        check('pod', pod);
        for (const container of pod.containers) {
          check('container', container);
          for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) if (container[probe]) check('probe', container[probe]);
        }
      }
    });

    test('replicas: stable names from the headless Service, the replica id from the pod, the drain inside the grace period', () => {
      const set = find('StatefulSet', 'mcp-sandbox');
      const service = find('Service', set.spec.serviceName);
      assert.equal(service.spec.clusterIP, 'None');
      assert.equal(service.spec.publishNotReadyAddresses, true);
      const labels = set.spec.template.metadata.labels;
      for (const [key, value] of Object.entries(set.spec.selector.matchLabels)) assert.equal(labels[key], value);
      for (const [key, value] of Object.entries(service.spec.selector)) assert.equal(labels[key], value);
      const [server] = set.spec.template.spec.containers;
      const env = Object.fromEntries(server.env.map((entry) => [entry.name, entry]));
      assert.equal(env.POD_INDEX.valueFrom.fieldRef.fieldPath, "metadata.labels['apps.kubernetes.io/pod-index']");
      assert.equal(env.SANDBOX_REPLICA_ID.value, 'r$(POD_INDEX)');
      // $(VAR) expands only from variables defined earlier in the list.
      assert.ok(server.env.findIndex((e) => e.name === 'POD_INDEX') < server.env.findIndex((e) => e.name === 'SANDBOX_REPLICA_ID'));
      assert.equal(env.SANDBOX_HTTP_PORT.value, '8080');
      assert.equal(server.ports[0].containerPort, 8080);
      const drain = Number(env.SANDBOX_DRAIN_TIMEOUT_S.value);
      assert.ok(drain > 0);
      assert.ok(set.spec.template.spec.terminationGracePeriodSeconds >= drain + 30, 'the grace period does not cover the drain');
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) assert.equal(server[probe].httpGet.path, '/healthz');
      assert.equal(server.securityContext.privileged, true, 'the namespace backend needs a privileged container');
      const token = server.volumeMounts.find((mount) => env.SANDBOX_AUTH_TOKEN_FILE.value.startsWith(`${mount.mountPath}/`));
      assert.ok(token, 'the token file is not on a mounted volume');
      const volume = set.spec.template.spec.volumes.find((v) => v.name === token.name);
      assert.ok(volume.secret?.secretName);
      const budget = objects.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'mcp-sandbox');
      assert.deepEqual(budget.spec.selector.matchLabels, set.spec.selector.matchLabels);
      assert.equal(budget.spec.maxUnavailable, 1);
    });

    test('replicas: hibernated sessions on a volume claim per ordinal, sized above the saved-sessions cap; scratch limited', () => {
      const set = find('StatefulSet', 'mcp-sandbox');
      const [server] = set.spec.template.spec.containers;
      const env = Object.fromEntries(server.env.map((entry) => [entry.name, entry.value]));
      // Hibernation stays on (the shipped default): nothing turns it off.
      assert.ok(!('SANDBOX_HIBERNATE_AFTER_S' in env) || Number(env.SANDBOX_HIBERNATE_AFTER_S) > 0, 'hibernation is off');
      const saved = server.volumeMounts.find((mount) => mount.mountPath === `${env.SANDBOX_STATE_DIR}/hibernated`);
      assert.ok(saved, `nothing mounted at ${env.SANDBOX_STATE_DIR}/hibernated`);
      assert.ok(!set.spec.template.spec.volumes.some((volume) => volume.name === saved.name),
        'the saved sessions are on a pod volume, gone when the pod is replaced');
      const claim = (set.spec.volumeClaimTemplates ?? []).find((template) => template.metadata.name === saved.name);
      assert.ok(claim, `no volumeClaimTemplate ${saved.name}`);
      assert.deepEqual(claim.spec.accessModes, ['ReadWriteOnce']);
      const bytes = (size) => {
        const match = /^(\d+)(Ki|Mi|Gi|Ti|k|m|g|t)?$/i.exec(String(size));
        assert.ok(match, `not a size: ${size}`);
        const unit = { ki: 2 ** 10, mi: 2 ** 20, gi: 2 ** 30, ti: 2 ** 40, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };
        return Number(match[1]) * (match[2] ? unit[match[2].toLowerCase()] : 1);
      };
      // The server's cap (SANDBOX_SAVED_MAX_BYTES, k/m/g in powers of 1024) leaves room on the
      // claim for the save being written (up to a session's memory limit).
      const cap = bytes(env.SANDBOX_SAVED_MAX_BYTES);
      assert.ok(cap + bytes(env.SANDBOX_MEMORY_LIMIT) <= bytes(claim.spec.resources.requests.storage),
        `SANDBOX_SAVED_MAX_BYTES ${env.SANDBOX_SAVED_MAX_BYTES} + a save does not fit the ${claim.spec.resources.requests.storage} claim`);
      assert.ok(server.resources.limits['ephemeral-storage'], 'no ephemeral-storage limit for scratch');
      assert.ok(server.resources.requests['ephemeral-storage']);
    });

    test('router: the generated ConfigMap is the template rendered for this StatefulSet, mounted where HAProxy reads it', () => {
      const set = find('StatefulSet', 'mcp-sandbox');
      const namespace = set.metadata.namespace;
      assert.equal(namespace, 'mcp-sandbox');
      const deployment = find('Deployment', 'mcp-router');
      const pod = deployment.spec.template.spec;
      const configVolume = pod.volumes.find((volume) => volume.configMap);
      const map = find('ConfigMap', configVolume.configMap.name);
      const config = map.data['haproxy.cfg'];
      assert.equal(config, render(K8S_RENDER_ARGS));
      for (let i = 0; i < Number(set.spec.replicas); i++) {
        assert.match(config, new RegExp(`^    server r${i} ${set.metadata.name}-${i}\\.${set.spec.serviceName}\\.${namespace}\\.svc\\.cluster\\.local:8080 check`, 'm'));
      }
      const [haproxy] = pod.containers;
      const mount = haproxy.volumeMounts.find((m) => m.name === configVolume.name);
      assert.ok(haproxy.args.includes(`${mount.mountPath}/haproxy.cfg`), haproxy.args.join(' '));
      const adminDir = /stats socket (\S+)\/[^/\s]+ /.exec(config)[1];
      assert.ok(haproxy.volumeMounts.some((m) => m.mountPath === adminDir), `nothing writable at ${adminDir}`);
      const bindPort = Number(/^\s*bind \S*:(\d+)$/m.exec(config)[1]);
      assert.equal(haproxy.ports[0].containerPort, bindPort);
      assert.equal(haproxy.readinessProbe.httpGet.path, '/router-healthz');
      assert.match(config, /monitor-uri \/router-healthz/);
      const service = find('Service', 'mcp-router');
      assert.deepEqual(service.spec.selector, deployment.spec.selector.matchLabels);
      // Links the replicas mint point at the router's Service.
      const env = Object.fromEntries(set.spec.template.spec.containers[0].env.map((e) => [e.name, e.value]));
      assert.equal(env.SANDBOX_PUBLIC_URL, `http://${service.metadata.name}.${namespace}.svc.cluster.local`);
      assert.equal(service.spec.ports[0].port, 80);
    });

    test('only the router reaches a replica', () => {
      const policy = find('NetworkPolicy');
      const set = find('StatefulSet', 'mcp-sandbox');
      const deployment = find('Deployment', 'mcp-router');
      assert.deepEqual(policy.spec.podSelector.matchLabels, set.spec.selector.matchLabels);
      assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
      assert.equal(policy.spec.ingress.length, 1);
      assert.deepEqual(policy.spec.ingress[0].from, [{ podSelector: { matchLabels: deployment.spec.selector.matchLabels } }]);
      assert.deepEqual(policy.spec.ingress[0].ports, [{ port: 8080, protocol: 'TCP' }]);
    });
  });
});
