// Validates the Kubernetes manifests of deploy/ offline: node validate_deploy.mjs DEPLOY_DIR [METRICS_URL]
//
// - Kubernetes' own kinds against their OpenAPI schemas (npm `kubernetes-models`), the Gateway API's through
//   `@kubernetes-models/gateway-api`, the InferencePool against the JSON Schema derived from its published CRD
//   (DEPLOY_DIR/schemas, with SOURCES.md) plus the CRD's two CEL rules;
// - the endpoint picker's EndpointPickerConfig (its ConfigMap): known plugin types, profiles naming plugins
//   that exist;
// - what ties them together: the pool selects the lctx pods and their port, the picker is the Service the
//   pool names, readiness is /health, the grace period outlasts preStop plus --drain-timeout, the route
//   reaches the pool, and (with METRICS_URL, a running lctx serve's /metrics) every metric the picker is told
//   to read is one lctx serves.
// Before that it checks itself: broken copies of the manifests must fail, else the check proves nothing.
// Prints "manifests valid: N documents" and exits 0, or prints each problem and exits 1.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import Ajv from "ajv";
// The models of the kinds deploy/ uses, one module each (the packages' indexes load every schema: seconds).
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { Gateway } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/Gateway";
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute";

const [deployDir, metricsUrl] = process.argv.slice(2);
if (!deployDir) {
  console.error("usage: node validate_deploy.mjs DEPLOY_DIR [METRICS_URL]");
  process.exit(2);
}

// apiVersion -> the models of its kinds.
const groups = {
  v1: { ConfigMap, Service, ServiceAccount },
  "apps/v1": { Deployment },
  "rbac.authorization.k8s.io/v1": { Role, RoleBinding },
  "gateway.networking.k8s.io/v1": { Gateway, HTTPRoute },
};

const poolSchema = JSON.parse(fs.readFileSync(path.join(deployDir, "schemas", "inferencepool-v1.schema.json")));
const ajv = new Ajv({ allErrors: true, strict: false });
const validatePool = ajv.compile(poolSchema);

const knownPlugins = new Set([
  "single-profile-handler", "prefix-cache-scorer", "precise-prefix-cache-scorer", "queue-scorer",
  "kv-cache-utilization-scorer", "load-aware-scorer", "lora-affinity-scorer", "max-score-picker",
  "random-picker", "weighted-random-picker", "decode-filter", "prefill-filter", "pd-profile-handler",
]);

function loadDocs(dir) {
  const docs = [];
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
    for (const d of YAML.parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8"))) {
      if (d.errors.length) throw new Error(`${f}: ${d.errors[0].message}`);
      const obj = d.toJS();
      if (obj) docs.push({ file: f, obj });
    }
  }
  return docs;
}

// One document's schema problems ([] when valid).
function schemaProblems({ file, obj }) {
  const where = `${file}: ${obj.kind} ${obj.metadata?.name}`;
  if (obj.apiVersion === "inference.networking.k8s.io/v1" && obj.kind === "InferencePool") {
    const out = [];
    if (!validatePool(obj))
      for (const e of validatePool.errors) out.push(`${where}: ${e.instancePath || "/"} ${e.message}`);
    const ref = obj.spec?.endpointPickerRef;
    if (ref && (ref.kind ?? "Service") === "Service" && !ref.port)
      out.push(`${where}: endpointPickerRef.port is required when kind is 'Service' or unspecified`);
    const ports = (obj.spec?.targetPorts ?? []).map((p) => p.number);
    if (new Set(ports).size !== ports.length) out.push(`${where}: targetPorts: port number must be unique`);
    return out;
  }
  const models = groups[obj.apiVersion];
  const Model = models && models[obj.kind];
  if (!Model) return [`${where}: no schema for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [`${where}: ${e.message}`];
  }
}

function eppConfigProblems(text) {
  const out = [];
  const cfg = YAML.parse(text);
  if (cfg?.apiVersion !== "inference.networking.x-k8s.io/v1alpha1" || cfg?.kind !== "EndpointPickerConfig")
    out.push("epp config: apiVersion/kind must be inference.networking.x-k8s.io/v1alpha1 EndpointPickerConfig");
  const names = new Set();
  for (const p of cfg?.plugins ?? []) {
    if (!knownPlugins.has(p.type)) out.push(`epp config: unknown plugin type '${p.type}'`);
    names.add(p.name ?? p.type);
  }
  if (!(cfg?.schedulingProfiles?.length > 0)) out.push("epp config: no schedulingProfiles");
  for (const prof of cfg?.schedulingProfiles ?? [])
    for (const r of prof.plugins ?? []) {
      if (!names.has(r.pluginRef)) out.push(`epp config: profile ${prof.name} names no plugin '${r.pluginRef}'`);
      if (r.weight !== undefined && typeof r.weight !== "number")
        out.push(`epp config: weight of ${r.pluginRef} is not a number`);
    }
  return out;
}

const argValue = (args, flag) => {
  const a = (args ?? []).find((x) => x.startsWith(flag + "="));
  return a === undefined ? undefined : a.slice(flag.length + 1);
};

// Problems of the whole set: schemas, the picker's config, and the references between the objects.
async function problems(docs) {
  const out = docs.flatMap(schemaProblems);
  const find = (kind, name) => docs.map((d) => d.obj).find((o) => o.kind === kind && o.metadata?.name === name);
  const pool = docs.map((d) => d.obj).find((o) => o.kind === "InferencePool");
  if (!pool) return [...out, "no InferencePool"];
  const lctx = docs
    .map((d) => d.obj)
    .find((o) => o.kind === "Deployment" && o.spec?.template?.spec?.containers?.some((c) => c.args?.[0] === "serve"));
  if (!lctx) return [...out, "no Deployment running `lctx serve`"];
  const pod = lctx.spec.template.spec;
  const c = pod.containers.find((c) => c.args?.[0] === "serve");
  const labels = lctx.spec.template.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(pool.spec?.matchLabels ?? pool.spec?.selector?.matchLabels ?? {}))
    if (labels[k] !== v) out.push(`InferencePool selector ${k}=${v} does not select the lctx pods`);
  const port = Number(argValue(c.args, "--port"));
  if (!c.ports?.some((p) => p.containerPort === port)) out.push(`the lctx container does not expose --port ${port}`);
  if (pool.spec?.targetPorts?.[0]?.number !== port) out.push(`InferencePool targetPorts is not lctx's --port ${port}`);
  if (c.readinessProbe?.httpGet?.path !== "/health") out.push("lctx's readinessProbe must GET /health");
  if (!c.livenessProbe) out.push("lctx has no livenessProbe");
  if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory) out.push("lctx requests no cpu or memory");
  const drain = Number(argValue(c.args, "--drain-timeout") ?? 30);
  const cmd = c.lifecycle?.preStop?.exec?.command ?? [];
  const preStop = cmd.length && /sleep$/.test(cmd[0]) ? Number(cmd[1]) : 0;
  if (!((pod.terminationGracePeriodSeconds ?? 30) > drain + preStop))
    out.push(`terminationGracePeriodSeconds must exceed preStop (${preStop} s) + --drain-timeout (${drain} s)`);
  // The picker: the Service the pool names, on the port it names, and its Deployment's flags.
  const ref = pool.spec?.endpointPickerRef ?? {};
  const eppSvc = find("Service", ref.name);
  if (!eppSvc) out.push(`no Service '${ref.name}' for the endpoint picker`);
  else if (!eppSvc.spec?.ports?.some((p) => p.port === ref.port?.number))
    out.push(`Service ${ref.name} has no port ${ref.port?.number}`);
  const epp = docs
    .map((d) => d.obj)
    .find((o) => o.kind === "Deployment" && o.spec?.template?.spec?.containers?.some((c) => argValue(c.args, "--pool-name")));
  if (!epp) return [...out, "no endpoint picker Deployment (--pool-name)"];
  const ec = epp.spec.template.spec.containers.find((c) => argValue(c.args, "--pool-name"));
  if (argValue(ec.args, "--pool-name") !== pool.metadata.name) out.push("the picker's --pool-name is not the pool");
  if (eppSvc && !Object.entries(eppSvc.spec.selector ?? {}).every(([k, v]) => epp.spec.template.metadata?.labels?.[k] === v))
    out.push(`Service ${ref.name} does not select the picker's pods`);
  const cfgFile = argValue(ec.args, "--config-file");
  const vol = epp.spec.template.spec.volumes?.find((v) => v.configMap);
  const cm = vol && find("ConfigMap", vol.configMap.name);
  const cfgText = cm?.data?.[path.basename(cfgFile ?? "")];
  if (!cfgText) out.push(`the picker's --config-file ${cfgFile} is in no ConfigMap it mounts`);
  else out.push(...eppConfigProblems(cfgText));
  const route = docs.map((d) => d.obj).find((o) => o.kind === "HTTPRoute");
  if (!route?.spec?.rules?.some((r) => r.backendRefs?.some((b) => b.kind === "InferencePool" && b.name === pool.metadata.name)))
    out.push("no HTTPRoute sends requests to the InferencePool");
  // The metrics the picker reads must be series lctx serves.
  const metricFlags = (ec.args ?? []).filter((a) => /^--[a-z-]+-metric=/.test(a)).map((a) => a.split("=")[1]);
  if (metricFlags.length < 3) out.push("the picker is told fewer than 3 of lctx's metrics");
  if (metricsUrl) {
    const text = await (await fetch(metricsUrl)).text();
    for (const m of metricFlags) {
      const served = text.split("\n").some((l) => l.startsWith(m + "{") || l.startsWith(m + " "));
      if (!served) out.push(`the picker reads ${m}, which lctx serve's /metrics lacks`);
    }
  }
  return out;
}

const docs = loadDocs(deployDir);

// The check must be able to fail: each broken copy must be refused.
const clone = (x) => JSON.parse(JSON.stringify(x));
const breakers = {
  "replicas as a string": (ds) => (ds.find((d) => d.obj.kind === "Deployment").obj.spec.replicas = "three"),
  "a target port out of range": (ds) => (ds.find((d) => d.obj.kind === "InferencePool").obj.spec.targetPorts[0].number = 70000),
  "a picker without its port": (ds) => delete ds.find((d) => d.obj.kind === "InferencePool").obj.spec.endpointPickerRef.port,
  "a Service port as text": (ds) => (ds.find((d) => d.obj.kind === "Service").obj.spec.ports[0].port = "eighty"),
  "a pool field misspelled": (ds) => {
    const p = ds.find((d) => d.obj.kind === "InferencePool").obj.spec;
    p.targetPort = p.targetPorts;
    delete p.targetPorts;
  },
};
let selfCheck = true;
for (const [what, breakIt] of Object.entries(breakers)) {
  const broken = docs.map(clone);
  breakIt(broken);
  if ((await problems(broken)).length === 0) {
    console.log(`self-check failed: manifests with ${what} pass`);
    selfCheck = false;
  }
}

const found = await problems(docs);
for (const p of found) console.log(p);
if (found.length || !selfCheck) process.exit(1);
console.log(`manifests valid: ${docs.length} documents`);
