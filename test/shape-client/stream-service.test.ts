import { describeFlows } from './flows'

describeFlows('service')
