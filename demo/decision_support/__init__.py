"""DecisionSupportFlow: Northstar Cloud support; each draft is judged before it is delivered."""
