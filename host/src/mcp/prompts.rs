//! `prompts/list` and `prompts/get`: the caller's `[snippets]`, and the
//! prompts of the packs it may call (rendered by the pack).

use std::sync::Arc;

use pack_api::protocol::PROMPTS_LIST;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt,
        PromptArgument, PromptMessage, Role,
    },
    service::RequestContext,
};
use serde_json::Value;

use super::{
    PackhostServer,
    request::{not_mcp, protocol_error},
    rounds::{Retry, Step},
    wire::asking,
};
use crate::executor::{Caller, prompt_arguments};

impl PackhostServer {
    /// The caller's `[snippets]` (a parameter without a default is a
    /// required argument), then its packs' prompts: those every caller
    /// sees, then those a pack lists for this caller.
    pub(super) async fn prompts_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListPromptsResult {
        let caller = self.caller_for(context);
        let identity = &caller.identity;
        let snippets = self
            .executor
            .prompts(identity)
            .into_iter()
            .map(|(name, snippet)| {
                let arguments = snippet
                    .params
                    .iter()
                    .map(|(param, spec)| {
                        let argument =
                            PromptArgument::new(param).with_required(spec.default.is_none());
                        match &spec.description {
                            Some(description) => argument.with_description(description),
                            None => argument,
                        }
                    })
                    .collect();
                let description = Some(&snippet.description).filter(|d| !d.is_empty());
                Prompt::new(name, description, Some(arguments))
            });
        let packs = self
            .executor
            .pack_prompts(identity)
            .into_iter()
            .filter_map(|(name, spec)| {
                let prompt = serde_json::to_value(spec).and_then(serde_json::from_value::<Prompt>);
                let mut prompt = prompt
                    .inspect_err(|e| tracing::warn!(prompt = name, error = %e, "prompt not listed"))
                    .ok()?;
                prompt.name = name;
                Some(prompt)
            });
        let listed = self
            .executor
            .caller_offers(PROMPTS_LIST, "prompts", &caller);
        let per_caller = listed.await.into_iter().filter_map(|prompt| {
            serde_json::from_value::<Prompt>(prompt)
                .inspect_err(|e| tracing::warn!(error = %e, "a pack's prompt is not listed"))
                .ok()
        });
        let prompts = snippets.chain(packs).chain(per_caller);
        ListPromptsResult::with_all_items(prompts.collect())
    }

    /// A snippet of the caller's, rendered as one user message (the command
    /// it stands for, to give to `run`), or a pack prompt rendered by its
    /// pack.
    pub(super) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let caller = self.caller_for(context);
        let identity = caller.identity.clone();
        let arguments = request.arguments.unwrap_or_default();
        // A pack's prompt may ask the client while it renders.
        let args = Value::Object(arguments.clone());
        let binding = format!("prompts/get\n{}\n{args}", request.name);
        let retry = Retry {
            state: request.request_state,
            responses: request.input_responses,
        };
        let (executor, name) = (Arc::clone(&self.executor), request.name.clone());
        let render =
            move |caller: Caller| async move { executor.render_prompt(&name, args, &caller).await };
        let step = asking(
            &self.prompt_rounds,
            context,
            &binding,
            retry,
            None,
            caller,
            render,
        );
        let rendered = match step.await? {
            Step::Done(rendered) => rendered,
            Step::Asked(asked) => return Ok(asked.into()),
            Step::Running(_) => unreachable!("a render is never handed back running"),
        };
        if let Some(rendered) = rendered {
            let rendered = rendered.map_err(|failure| protocol_error(&failure))?;
            let given: GetPromptResult =
                serde_json::from_value(rendered).map_err(|e| not_mcp("prompt", &e))?;
            // Built anew, so that the wire's own fields (`resultType`) are set.
            let mut result = GetPromptResult::new(given.messages);
            result.description = given.description;
            return Ok(result.into());
        }
        let arguments = prompt_arguments(arguments);
        let (description, text) = self
            .executor
            .prompt(&identity, &request.name, &arguments)
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        if !description.is_empty() {
            result = result.with_description(description);
        }
        Ok(result.into())
    }
}
