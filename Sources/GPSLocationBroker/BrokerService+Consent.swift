import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore

// Consent: a program's request for a decision, the agent that answers it for its user, and the
// prompt's expiry. Part of `BrokerService`, in a file of its own.
extension BrokerService {
    func request(_ message: BrokerMessage, _ client: BrokerClient, _ id: Int) {
        guard let app = client.app else { return }
        let key = Key(uid: client.identity.uid, app: app)
        let always = message.bool("always") ?? false
        enum Step {
            case decided(AuthorizationDecision)
            case ask(BrokerClient, Int)
            case nobody
        }
        let step = state.withLock { state -> Step in
            let current = decision(for: client, app: app, in: &state)
            // Apple's rule: a request after a decision changes nothing (except When In Use → Always).
            guard current.status == .notDetermined || (always && current.status == .authorizedWhenInUse) else {
                return .decided(current)
            }
            guard let agent = state.agents[key.uid] else { return .nobody }
            let promptID = state.nextPrompt
            state.nextPrompt += 1
            state.prompts[promptID] = PendingPrompt(
                requester: client, requestID: id, key: key, agent: agent,
                deadline: Date().addingTimeInterval(promptTimeout))
            return .ask(agent, promptID)
        }
        switch step {
        case .decided(let decision):
            reply(client, id, ok: true, message: "already decided", decision: decision)
        case .nobody:
            let flag = always || !client.inUse ? "--always" : "--when-in-use"
            reply(
                client, id, ok: false,
                message: "no one can be asked for location permission for \(app) (no agent is running for uid "
                    + "\(key.uid)): nothing is delivered until it is granted — run `gpsloc auth grant \(app) \(flag)`, "
                    + "or keep `gpsloc agent` running in your terminal to be asked; locations start at once")
        case .ask(let agent, let promptID):
            var line = BrokerLine("PROMPT")
            line.add("prompt", promptID)
            line.add("app", app)
            line.add("identity", client.identity.kind)
            line.add("pid", Int(client.identity.pid))
            line.add("always", always)
            line.add("usage", message.string("usage"))
            agent.send(line.line)
            DispatchQueue.global().asyncAfter(deadline: .now() + promptTimeout) { [weak self] in
                self?.expire(promptID)
            }
        }
    }

    func expire(_ promptID: Int) {
        guard let prompt = state.withLock({ $0.prompts.removeValue(forKey: promptID) }) else { return }
        reply(
            prompt.requester, prompt.requestID, ok: false,
            message: "the agent did not answer within \(Int(promptTimeout)) s — nothing is delivered; run "
                + "`gpsloc auth grant \(prompt.key.app)` to decide")
    }

    func becomeAgent(_ client: BrokerClient, _ id: Int) {
        guard client.identity.flatpak == nil else {
            return reply(client, id, ok: false, message: "a sandboxed app cannot be an agent")
        }
        let previous = state.withLock { state -> BrokerClient? in
            defer {
                state.agents[client.identity.uid] = client
                client.isAgent = true
            }
            return state.agents[client.identity.uid]
        }
        if let previous, previous !== client {
            previous.send(errorLine("another agent took over for uid \(client.identity.uid)"))
        }
        reply(client, id, ok: true, message: "prompts for uid \(client.identity.uid) come here")
    }

    func answer(_ message: BrokerMessage, _ client: BrokerClient) {
        guard let promptID = message.int("prompt"),
            let prompt = state.withLock({ state -> PendingPrompt? in
                guard state.prompts[promptID]?.agent === client else { return nil }
                return state.prompts.removeValue(forKey: promptID)
            })
        else { return client.send(errorLine("no such prompt")) }
        let status = message.string("status").flatMap(BrokerProtocol.status(named:)) ?? .denied
        let accuracy = message.string("accuracy").flatMap(BrokerProtocol.accuracy(named:)) ?? .fullAccuracy
        let decision = AuthorizationDecision(
            status: status == .notDetermined || status == .restricted ? .denied : status, accuracy: accuracy)
        if message.bool("once") ?? false {
            allowOnce(prompt.requester, prompt.key, decision)
            return reply(prompt.requester, prompt.requestID, ok: true, message: "answered", decision: decision)
        }
        do {
            try decide(prompt.key, decision)
            reply(prompt.requester, prompt.requestID, ok: true, message: "answered", decision: decision)
        } catch {
            reply(prompt.requester, prompt.requestID, ok: false, message: error.description)
        }
    }
}
