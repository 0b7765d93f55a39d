//! `completion/complete`: a snippet's parameter completes to its default,
//! a kept result's handle to the caller's handles, and a pack prompt's or
//! template's arguments to what the pack says.

use pack_api::Owner;
use rmcp::{
    ErrorData, RoleServer,
    model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference},
    service::RequestContext,
};

use super::{
    PackhostServer,
    request::{not_mcp, protocol_error},
};
use crate::{render::value_text, results::URI_PREFIX};

impl PackhostServer {
    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let caller = self.caller_for(context);
        let typed = request.argument.value.as_str();
        let own: Option<Vec<String>> = match &request.r#ref {
            Reference::Prompt(prompt) => self
                .executor
                .prompts(&caller.identity)
                .into_iter()
                .find(|(name, _)| *name == prompt.name)
                .map(|(_, snippet)| {
                    let param = snippet.params.get(&request.argument.name);
                    let default = param.and_then(|p| p.default.as_ref());
                    default.map(value_text).into_iter().collect()
                }),
            Reference::Resource(template) if template.uri == format!("{URI_PREFIX}{{handle}}") => {
                let owner = Owner::new(&caller.identity.org, &caller.identity.user);
                // Completion is a hint: a store that does not answer offers none.
                let kept = self.executor.results().list(&owner).await;
                Some(
                    kept.unwrap_or_default()
                        .into_iter()
                        .map(|k| k.handle)
                        .collect(),
                )
            }
            _ => None,
        };
        if let Some(candidates) = own {
            let mut values: Vec<String> = candidates
                .into_iter()
                .filter(|value| value.starts_with(typed))
                .collect();
            let total = values.len();
            values.truncate(CompletionInfo::MAX_VALUES);
            let mut completion = CompletionInfo::new(values).unwrap_or_default();
            completion.total = u32::try_from(total).ok();
            completion.has_more = Some(total > CompletionInfo::MAX_VALUES);
            return Ok(CompleteResult::new(completion));
        }
        let params = serde_json::to_value(&request).map_err(|e| not_mcp("request", &e))?;
        match self.executor.complete_pack(params, &caller).await {
            Some(completed) => {
                let completed = completed.map_err(|failure| protocol_error(&failure))?;
                let given: CompleteResult =
                    serde_json::from_value(completed).map_err(|e| not_mcp("completion", &e))?;
                // Built anew, so that the wire's own fields (`resultType`) are set.
                Ok(CompleteResult::new(given.completion))
            }
            None => Err(ErrorData::invalid_params(
                "no prompt or resource template of that name to complete: `prompts/list` and \
                 `resources/templates/list` name them",
                None,
            )),
        }
    }
}
