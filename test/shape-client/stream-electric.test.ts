import { describeFlows } from './flows'

describeFlows('electric')
